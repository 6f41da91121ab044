"""The Cloud Logging query language subset the emulator's ``entries.list`` understands.

Source: Google's "Logging query language" reference
(cloud.google.com/logging/docs/view/logging-query-language) and its troubleshooting page
(cloud.google.com/logging/docs/view/troubleshoot-lql). Supported:

* comparisons ``FIELD OP VALUE`` with ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` and ``:`` (has: a
  substring test on text, equality elsewhere); ``FIELD:*`` tests that the field exists. "String
  comparisons aren't case sensitive" (the reference's overview), so every string comparison here
  compares case-folded text; a number in ``jsonPayload`` is compared as a number;
* value groups, the reference's ``resource.type = ("gae_app" OR "gce_instance")``: the right side
  may be a parenthesised expression of values with ``OR``, ``AND`` and ``NOT``, each value compared
  with the same field and operator (the troubleshooting page's ``insertId = ("ABC-1" OR "ABC-2")``);
* fields ``resource.type``, ``resource.labels.KEY``, ``labels.KEY`` (a key with dots or slashes is
  quoted: ``labels."ml.googleapis.com/trial_id"``), ``severity`` (compared by level: ``DEBUG`` <
  ``INFO`` < ... < ``EMERGENCY``, by name or number), ``timestamp`` and ``receiveTimestamp`` (RFC 3339
  values, compared as times), ``logName``, ``insertId``, ``textPayload`` and ``jsonPayload.KEY``
  (nested keys with dots: ``jsonPayload.attrs.tag``);
* the function ``log_id("ID")`` (also ``LOG_ID``): the entries whose ``logName`` is
  ``projects/P/logs/ID`` (the ID percent-encoded in ``logName``, as ``ml.googleapis.com%2F123``);
* a bare word or quoted string, a global restriction: as the reference says, every field of the
  entry is compared with it by the has operator (case-insensitive substring);
* ``AND``, ``OR``, ``NOT`` (or a leading ``-``), parentheses, juxtaposition (``a b`` is ``a AND b``)
  and comments (``--`` to the end of the line). As the reference documents, ``NOT`` binds tightest,
  then ``OR``, then ``AND``: ``a AND b OR c`` is ``a AND (b OR c)``.

Not supported, and refused with an error naming what is unsupported (never a silent mismatch):
regular expressions (``=~``, ``!~``) and every other function (``sample()``, ``SEARCH()``,
``cast()``, ``regex_extract()``, ``ip_in_net()``...). Parsing is one left-to-right pass over at most
``MAX_FILTER_CHARS`` characters (Cloud Logging's own limit: "Length of a Logging query language
query: 20,000 characters", cloud.google.com/logging/quotas) with at most ``MAX_DEPTH`` nested groups;
every error is a ``LogFilterError`` naming the position and the rule (the API answers
INVALID_ARGUMENT).

Evaluation is bounded too: a filter holds at most ``MAX_TERMS`` comparisons and search terms (the
emulator's own bound; Cloud Logging documents none), where the ``=`` values of one text field joined
by ``OR`` (``resource.labels.job_id="1" OR resource.labels.job_id="2"``, a value group) count once: they
are one set lookup. Each entry's text is case-folded once, however many terms read it, so an entry
costs at most ``MAX_TERMS`` lookups or substring tests of its text.

``parse_log_filter`` also returns what the filter's top level pins down (``LogQuery.sets``: the
``resource.labels.job_id`` / ``task_name`` values an entry must have; ``since``/``until``: its
timestamp range), which the API uses to skip whole jobs and files; the predicate stays the judge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from vertex_emulator.core.jobkinds import SEVERITIES
from vertex_emulator.core.timefmt import rfc3339_nanos

__all__ = [
    "HINT_FIELDS",
    "MAX_DEPTH",
    "MAX_FILTER_CHARS",
    "MAX_TERMS",
    "LogFilterError",
    "LogPredicate",
    "LogQuery",
    "compare_values",
    "compile_log_filter",
    "parse_log_filter",
    "severity_number",
]

#: Cloud Logging's own limit on the length of a filter ("Length of a Logging query language query:
#: 20,000 characters", cloud.google.com/logging/quotas).
MAX_FILTER_CHARS = 20_000
MAX_DEPTH = 64
#: comparisons and search terms in one filter, the ``=`` values of one field joined by OR counting once
#: (the emulator's own bound: every entry a request reads is tested against each term).
MAX_TERMS = 100
#: the fields whose ``=`` values ``LogQuery.sets`` collects (case-folded)
HINT_FIELDS = ("resource.labels.job_id", "resource.labels.task_name")

#: an entry as the evaluator sees it: ``field path -> value`` (a str, an int for severity/times, or a
#: JSON scalar for ``jsonPayload`` keys).
LogPredicate = Callable[[Mapping[str, Any]], bool]

_OPERATORS = ("<=", ">=", "!=", "=~", "!~", "=", "<", ">", ":")
_STOP = frozenset(" \t\r\n()\"'")
_OPERATOR_CHARS = frozenset("=<>!:")
_FIELD_STOP = _STOP | _OPERATOR_CHARS | frozenset(".")
_VALUE_STOP = frozenset(" \t\r\n()")
_TIME_FIELDS = frozenset({"timestamp", "receiveTimestamp"})
_PLAIN_FIELDS = frozenset({"severity", "logName", "insertId", "textPayload", "resource.type"})
_MAP_PREFIXES = ("resource.labels.", "labels.", "jsonPayload.")
#: the reference's functions the emulator does not evaluate (named in the error)
_KNOWN_FUNCTIONS = frozenset({"sample", "search", "cast", "regex_extract", "ip_in_net"})
#: fields whose values are always text: their ``=`` values joined by OR merge into one set lookup
_TEXT_PREFIXES = ("resource.labels.", "labels.")
_TEXT_FIELDS = frozenset({"logName", "insertId", "textPayload", "resource.type"})


class LogFilterError(ValueError):
    """A filter that does not parse or uses an unsupported field, operator or function."""

    def __init__(self, text: str, pos: int, rule: str) -> None:
        self.pos = pos
        self.rule = rule
        super().__init__(f"filter: {rule} (at character {pos + 1} of {text[:80]!r})")


@dataclass
class LogQuery:
    """A compiled filter: the predicate, and what its top level pins down (supersets, never tighter)."""

    predicate: LogPredicate
    #: field (one of ``HINT_FIELDS``) -> the case-folded values a matching entry's field is one of
    sets: dict[str, frozenset[str]] = field(default_factory=dict)
    #: a matching entry's timestamp is at least ``since`` / at most ``until`` (nanoseconds)
    since: int | None = None
    until: int | None = None
    #: the comparisons and search terms an entry is tested against (see ``MAX_TERMS``)
    cost: int = 1
    #: set when the query is exactly "the text field PATH is one of these case-folded values"
    eq: tuple[str, frozenset[str]] | None = None


def _memo(entry: Mapping[str, Any], key: str, compute: Callable[[Mapping[str, Any]], Any]) -> Any:
    """``compute(entry)``: once per entry when the entry keeps a cache (log_entries' field map has
    ``cached``), so a filter of many terms folds an entry's text once."""
    cached = getattr(entry, "cached", None)
    return compute(entry) if cached is None else cached(key, compute)


def _fold(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).casefold()


def _folder(path: str) -> tuple[str, Callable[[Mapping[str, Any]], str | None]]:
    """The memo key and the computation of field ``path``'s case-folded text (None when missing)."""

    def fold(entry: Mapping[str, Any]) -> str | None:
        value = entry.get(path)
        return None if value is None else _fold(value)

    return f"fold:{path}", fold


def _texts(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """Every text field of the entry, case-folded (what a global restriction searches)."""
    return tuple(value.casefold() for value in entry.values() if isinstance(value, str))


def _one_of(path: str, values: frozenset[str]) -> LogQuery:
    """``path = v1 OR path = v2 ...`` on a text field: one set lookup."""
    key, fold = _folder(path)

    def test(entry: Mapping[str, Any]) -> bool:
        value = entry.get(path)
        if value is None:
            return False
        if isinstance(value, str):
            return _memo(entry, key, fold) in values
        return any(compare_values("=", value, literal) for literal in values)

    return LogQuery(test, eq=(path, values))


def _merge_equalities(parts: list[LogQuery]) -> list[LogQuery]:
    """OR'd ``=`` tests of one text field as one set lookup (the others as they are)."""
    out: list[LogQuery] = []
    groups: dict[str, list[frozenset[str]]] = {}
    for part in parts:
        if part.eq is None:
            out.append(part)
        else:
            groups.setdefault(part.eq[0], []).append(part.eq[1])
    for path, values in groups.items():
        out.append(_one_of(path, frozenset().union(*values)))
    return out


def _conjoin(parts: list[LogQuery]) -> LogQuery:
    preds = [p.predicate for p in parts]
    out = LogQuery(lambda entry: all(pred(entry) for pred in preds), cost=sum(p.cost for p in parts))
    for part in parts:
        for key, values in part.sets.items():
            out.sets[key] = out.sets[key] & values if key in out.sets else values
        if part.since is not None:
            out.since = part.since if out.since is None else max(out.since, part.since)
        if part.until is not None:
            out.until = part.until if out.until is None else min(out.until, part.until)
    return out


def _disjoin(parts: list[LogQuery]) -> LogQuery:
    merged = _merge_equalities(parts)
    if len(merged) == 1:
        out = merged[0]
    else:
        preds = [p.predicate for p in merged]
        out = LogQuery(lambda entry: any(pred(entry) for pred in preds), cost=sum(p.cost for p in merged))
    for key in set.intersection(*(set(p.sets) for p in parts)):
        out.sets[key] = frozenset().union(*(p.sets[key] for p in parts))
    sinces = [p.since for p in parts]
    untils = [p.until for p in parts]
    out.since = None if None in sinces else min(s for s in sinces if s is not None)
    out.until = None if None in untils else max(u for u in untils if u is not None)
    return out


def _negate(part: LogQuery) -> LogQuery:
    inner = part.predicate
    return LogQuery(lambda entry: not inner(entry), cost=part.cost)


def severity_number(value: str, *, text: str = "", pos: int = 0) -> int:
    """``"WARNING"`` or ``"400"`` -> 400; anything else is a ``LogFilterError``."""
    upper = value.upper()
    if upper in SEVERITIES:
        return SEVERITIES[upper]
    if value.isdigit() and len(value) <= 4:
        return int(value)
    names = ", ".join(SEVERITIES)
    raise LogFilterError(text, pos, f"severity must be one of {names} or a number (got {value!r})")


@dataclass
class _Scanner:
    text: str
    pos: int = 0

    def skip_space(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            if text[self.pos] in " \t\r\n":
                self.pos += 1
            elif text.startswith("--", self.pos):  # a comment, to the end of the line
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            else:
                return

    def at_end(self) -> bool:
        self.skip_space()
        return self.pos >= len(self.text)

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def error(self, rule: str, pos: int | None = None) -> LogFilterError:
        return LogFilterError(self.text, self.pos if pos is None else pos, rule)

    def quoted(self) -> str:
        quote = self.text[self.pos]
        start = self.pos
        self.pos += 1
        out: list[str] = []
        n = len(self.text)
        while self.pos < n:
            ch = self.text[self.pos]
            if ch == "\\" and self.pos + 1 < n:
                out.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            if ch == quote:
                self.pos += 1
                return "".join(out)
            out.append(ch)
            self.pos += 1
        raise self.error("unterminated quoted string", start)

    def bare(self, stop: frozenset[str]) -> str:
        start = self.pos
        n = len(self.text)
        while self.pos < n and self.text[self.pos] not in stop:
            self.pos += 1
        return self.text[start : self.pos]

    def value(self, what: str) -> tuple[str, int]:
        """A quoted or bare value at the cursor and where it starts."""
        self.skip_space()
        pos = self.pos
        if self.peek() in ('"', "'"):
            return self.quoted(), pos
        value = self.bare(_VALUE_STOP)
        if not value:
            raise self.error(f"{what} needs a value", pos)
        return value, pos

    def keyword(self, word: str) -> bool:
        """Consume ``word`` when it stands alone at the cursor (``AND`` but not ``ANDROID``)."""
        self.skip_space()
        end = self.pos + len(word)
        if self.text.startswith(word, self.pos) and (end >= len(self.text) or self.text[end] in _STOP):
            self.pos = end
            return True
        return False

    def operator(self) -> str | None:
        self.skip_space()
        for op in _OPERATORS:
            if self.text.startswith(op, self.pos):
                self.pos += len(op)
                return op
        return None


def _field_name(scanner: _Scanner) -> tuple[str, int]:
    """A field path: segments separated by ``.``, each bare or quoted. Returns (path, start)."""
    start = scanner.pos
    parts: list[str] = []
    stop = _FIELD_STOP
    while True:
        ch = scanner.text[scanner.pos] if scanner.pos < len(scanner.text) else ""
        if ch in ('"', "'"):
            parts.append(scanner.quoted())
        else:
            parts.append(scanner.bare(stop))
        if scanner.pos < len(scanner.text) and scanner.text[scanner.pos] == ".":
            scanner.pos += 1
            continue
        return ".".join(parts), start


def _check_field(scanner: _Scanner, path: str, pos: int) -> None:
    if path in _PLAIN_FIELDS or path in _TIME_FIELDS:
        return
    for prefix in _MAP_PREFIXES:
        if path.startswith(prefix) and len(path) > len(prefix):
            return
    raise scanner.error(
        f"unsupported field {path!r}: the emulator filters on resource.type, resource.labels.KEY, "
        "labels.KEY, severity, timestamp, receiveTimestamp, logName, insertId, textPayload and "
        "jsonPayload.KEY",
        pos,
    )


def _order(op: str, left: Any, right: Any) -> bool:
    if op in ("=", ":"):
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def compare_values(op: str, value: Any, literal: str) -> bool:
    """``value OP literal`` for a field that is neither a severity nor a time: False when the field is
    missing; a number (not a bool) against a numeric literal compares as numbers; everything else as
    case-folded text (``:`` is a substring test there)."""
    if value is None:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = _number(literal)
        if number is not None:
            return _order(op, value, number)
    if isinstance(value, bool):
        value = "true" if value else "false"
    left, right = str(value).casefold(), literal.casefold()
    if op == ":":
        return right in left
    return _order(op, left, right)


def _atom(scanner: _Scanner, path: str, op: str, value: str, value_pos: int) -> LogQuery:
    """One comparison of ``path`` with one value (``compare_values``, the entry's text folded once)."""
    if op == ":" and value == "*":
        return LogQuery(lambda entry: entry.get(path) is not None)
    if path == "severity":
        level = severity_number(value, text=scanner.text, pos=value_pos)
        return LogQuery(lambda entry: _order(op, entry["severity"], level))
    if path in _TIME_FIELDS:
        try:
            nanos = rfc3339_nanos(value)
        except ValueError:
            raise scanner.error(
                f'{path} must be compared with an RFC 3339 time like "2024-05-18T00:00:00Z" (got {value!r})',
                value_pos,
            ) from None
        query = LogQuery(lambda entry: entry.get(path) is not None and _order(op, entry[path], nanos))
        if path == "timestamp":
            query.since = nanos if op in (">", ">=", "=", ":") else None
            query.until = nanos if op in ("<", "<=", "=", ":") else None
        return query
    literal, number = value.casefold(), _number(value)
    key, fold = _folder(path)

    def test(entry: Mapping[str, Any]) -> bool:
        field_value = entry.get(path)
        if field_value is None:
            return False
        if number is not None and isinstance(field_value, int | float) and not isinstance(field_value, bool):
            return _order(op, field_value, number)
        text = _memo(entry, key, fold)
        return literal in text if op == ":" else _order(op, text, literal)

    text_field = path in _TEXT_FIELDS or path.startswith(_TEXT_PREFIXES)
    query = LogQuery(test, eq=(path, frozenset({literal})) if op == "=" and text_field else None)
    if op == "=" and path in HINT_FIELDS:
        query.sets[path] = frozenset({literal})
    return query


def _too_many(text: str, terms: int) -> LogFilterError:
    return LogFilterError(
        text,
        0,
        f"{terms} comparisons and search terms, more than {MAX_TERMS} (the = values of one field joined "
        "by OR count once): split it into several requests",
    )


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = _Scanner(text)
        self.depth = 0
        self.terms = 0  # terms that cannot merge with others: the query costs at least this many

    def term(self, query: LogQuery) -> LogQuery:
        """``query``, counted: past ``MAX_TERMS`` terms that merge with none, the filter is refused
        at once, before the rest of it is parsed."""
        if query.eq is None:
            self.terms += 1
            if self.terms > MAX_TERMS:
                raise _too_many(self.s.text, self.terms)
        return query

    def parse(self) -> LogQuery:
        if self.s.at_end():
            return LogQuery(lambda entry: True, cost=0)
        query = self.conjunction(self.unary)
        if not self.s.at_end():
            raise self.s.error(f"unexpected {self.s.peek()!r}")
        return query

    # -- boolean structure, shared by expressions and value groups ----------------------------

    def conjunction(self, term: Callable[[], LogQuery]) -> LogQuery:
        parts = [self.disjunction(term)]
        while True:
            if self.s.keyword("AND"):
                parts.append(self.disjunction(term))
            elif not self.s.at_end() and self.s.peek() != ")":
                parts.append(self.disjunction(term))  # juxtaposition
            else:
                break
        return parts[0] if len(parts) == 1 else _conjoin(parts)

    def disjunction(self, term: Callable[[], LogQuery]) -> LogQuery:
        parts = [term()]
        while self.s.keyword("OR"):
            parts.append(term())
        return parts[0] if len(parts) == 1 else _disjoin(parts)

    def negations(self) -> bool:
        negated = False
        while True:
            if self.s.keyword("NOT"):
                negated = not negated
            elif self.s.peek() == "-":
                self.s.pos += 1
                negated = not negated
            else:
                return negated

    def group(self, term: Callable[[], LogQuery]) -> LogQuery:
        """``( ... )`` at the cursor, its terms read by ``term``."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.s.error(f"more than {MAX_DEPTH} nested parentheses")
        self.s.pos += 1
        inner = self.conjunction(term)
        if self.s.peek() != ")":
            raise self.s.error("expected ')'")
        self.s.pos += 1
        self.depth -= 1
        return inner

    # -- expressions ----------------------------------------------------------------------------

    def unary(self) -> LogQuery:
        negated = self.negations()
        inner = self.primary()
        return _negate(inner) if negated else inner

    def primary(self) -> LogQuery:
        ch = self.s.peek()
        if not ch:
            raise self.s.error("expected a comparison, found the end of the filter")
        if ch == "(":
            return self.group(self.unary)
        if ch == ")":
            raise self.s.error("unexpected ')'")
        if ch in _OPERATOR_CHARS:
            raise self.s.error(f"expected a field or a search term before {ch!r}")
        quoted = ch in ('"', "'")
        path, pos = _field_name(self.s)
        if path in ("AND", "OR", "NOT"):
            raise self.s.error(f"{path} needs a term on each side", pos)
        if not quoted and self.s.pos < len(self.s.text) and self.s.text[self.s.pos] == "(":
            return self.term(self.function(path, pos))
        op = self.s.operator()
        if op is None:
            return self.term(self._search(path))
        if op in ("=~", "!~"):
            raise self.s.error("regular expressions (=~, !~) are not supported by the emulator", pos)
        _check_field(self.s, path, pos)
        if self.s.peek() == "(":
            return self.group(lambda: self.value_term(path, op))
        value, value_pos = self.s.value(f"{path}{op}")
        return self.term(_atom(self.s, path, op, value, value_pos))

    def value_term(self, path: str, op: str) -> LogQuery:
        """One term of a value group: ``[NOT] value`` or a nested ``( ... )``."""
        negated = self.negations()
        if self.s.peek() == "(":
            inner = self.group(lambda: self.value_term(path, op))
        else:
            value, value_pos = self.s.value(f"{path}{op}")
            if value in ("AND", "OR"):
                raise self.s.error(f"{value} needs a value on each side", value_pos)
            inner = self.term(_atom(self.s, path, op, value, value_pos))
        return _negate(inner) if negated else inner

    def function(self, name: str, pos: int) -> LogQuery:
        key = name.casefold()
        if key != "log_id":
            which = "the function" if key in _KNOWN_FUNCTIONS else "the unknown function"
            rule = f"{which} {name}() is not supported by the emulator (it supports log_id())"
            raise self.s.error(rule, pos)
        self.s.pos += 1  # "("
        log_id, _ = self.s.value("log_id()")
        if self.s.peek() != ")":
            raise self.s.error("log_id() takes one log ID, then ')'")
        self.s.pos += 1
        wanted = log_id.casefold()
        return LogQuery(lambda entry: _memo(entry, "log_id", _entry_log_id) == wanted)

    @staticmethod
    def _search(term: str) -> LogQuery:
        needle = term.casefold()
        return LogQuery(lambda entry: any(needle in text for text in _memo(entry, "texts", _texts)))


def _entry_log_id(entry: Mapping[str, Any]) -> str | None:
    """The LOG_ID of the entry's ``logName``, percent-decoded and case-folded."""
    name = entry.get("logName")
    if not isinstance(name, str) or "/logs/" not in name:
        return None
    return unquote(name.split("/logs/", 1)[1]).casefold()


def parse_log_filter(text: str) -> LogQuery:
    """Compile a Logging filter (see the module doc); ``LogFilterError`` when it cannot be."""
    if len(text) > MAX_FILTER_CHARS:
        raise LogFilterError(text, MAX_FILTER_CHARS, f"a filter is at most {MAX_FILTER_CHARS} characters")
    query = _Parser(text).parse()
    if query.cost > MAX_TERMS:
        raise _too_many(text, query.cost)
    return query


def compile_log_filter(text: str) -> LogPredicate:
    """The predicate of ``parse_log_filter(text)``."""
    return parse_log_filter(text).predicate
