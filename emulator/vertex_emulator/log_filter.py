"""The Cloud Logging query language subset the emulator's ``entries.list`` understands.

Source: Google's "Logging query language" reference
(cloud.google.com/logging/docs/view/logging-query-language). Supported:

* comparisons ``FIELD OP VALUE`` with ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` and ``:`` (has: a
  substring test on text, equality elsewhere); ``FIELD:*`` tests that the field exists;
* fields ``resource.type``, ``resource.labels.KEY``, ``labels.KEY`` (a key with dots or slashes is
  quoted: ``labels."ml.googleapis.com/trial_id"``), ``severity`` (compared by level: ``DEBUG`` <
  ``INFO`` < ... < ``EMERGENCY``, by name or number), ``timestamp`` and ``receiveTimestamp`` (RFC 3339
  values, compared as times), ``logName``, ``insertId``, ``textPayload`` and ``jsonPayload.KEY``;
* a bare word or quoted string: the entry's payload contains it (a global search);
* ``AND``, ``OR``, ``NOT`` (or a leading ``-``), parentheses, and juxtaposition (``a b`` is ``a AND b``).
  As the reference documents, ``NOT`` binds tightest, then ``OR``, then ``AND``: ``a AND b OR c`` is
  ``a AND (b OR c)``.

Not supported (an error, never a silent mismatch): regular expressions (``=~``, ``!~``), functions
such as ``sample()`` or ``SEARCH()``. Parsing is one left-to-right pass over at most
``MAX_FILTER_CHARS`` characters with at most ``MAX_DEPTH`` nested groups; every error is a
``LogFilterError`` naming the position and the rule (the API answers INVALID_ARGUMENT).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vertex_emulator.jobkinds import SEVERITIES
from vertex_emulator.timefmt import rfc3339_nanos

__all__ = [
    "MAX_DEPTH",
    "MAX_FILTER_CHARS",
    "LogFilterError",
    "LogPredicate",
    "compile_log_filter",
    "severity_number",
]

#: Cloud Logging's own limit on the length of a filter.
MAX_FILTER_CHARS = 20_000
MAX_DEPTH = 64


#: an entry as the evaluator sees it: ``field path -> value`` (a str, or an int for severity/times).
LogPredicate = Callable[[Mapping[str, Any]], bool]

_OPERATORS = ("<=", ">=", "!=", "=~", "!~", "=", "<", ">", ":")
_STOP = frozenset(" \t\r\n()\"'")
_OPERATOR_CHARS = frozenset("=<>!:")
_TIME_FIELDS = frozenset({"timestamp", "receiveTimestamp"})
_PLAIN_FIELDS = frozenset({"severity", "logName", "insertId", "textPayload", "resource.type"})
_MAP_PREFIXES = ("resource.labels.", "labels.", "jsonPayload.")


class LogFilterError(ValueError):
    """A filter that does not parse or uses an unsupported field or operator."""

    def __init__(self, text: str, pos: int, rule: str) -> None:
        self.pos = pos
        self.rule = rule
        super().__init__(f"filter: {rule} (at character {pos + 1} of {text[:80]!r})")


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
        n = len(self.text)
        while self.pos < n and self.text[self.pos] in " \t\r\n":
            self.pos += 1

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
    stop = _STOP | _OPERATOR_CHARS | frozenset(".")
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


def _compare(op: str, left: Any, right: Any) -> bool:
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


def _comparison(scanner: _Scanner, path: str, pos: int, op: str) -> LogPredicate:
    _check_field(scanner, path, pos)
    scanner.skip_space()
    value_pos = scanner.pos
    ch = scanner.peek()
    if ch in ('"', "'"):
        value = scanner.quoted()
    else:
        value = scanner.bare(frozenset(" \t\r\n()"))
        if not value:
            raise scanner.error(f"{path}{op} needs a value", value_pos)
    if op in ("=~", "!~"):
        raise scanner.error("regular expressions (=~, !~) are not supported by the emulator", pos)
    if op == ":" and value == "*":
        return lambda entry: entry.get(path) is not None
    if path == "severity":
        level = severity_number(value, text=scanner.text, pos=value_pos)
        return lambda entry: _compare(op, entry["severity"], level)
    if path in _TIME_FIELDS:
        try:
            nanos = rfc3339_nanos(value)
        except ValueError:
            raise scanner.error(
                f'{path} must be compared with an RFC 3339 time like "2024-05-18T00:00:00Z" (got {value!r})',
                value_pos,
            ) from None
        return lambda entry: entry.get(path) is not None and _compare(op, entry[path], nanos)
    if op == ":":
        needle = value.lower()
        return lambda entry: isinstance(entry.get(path), str) and needle in entry[path].lower()
    if op in ("=", "!="):
        return lambda entry: entry.get(path) is not None and _compare(op, str(entry[path]), value)
    return lambda entry: entry.get(path) is not None and _compare(op, str(entry[path]), value)


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = _Scanner(text)
        self.depth = 0

    def parse(self) -> LogPredicate:
        if self.s.at_end():
            return lambda entry: True
        predicate = self.conjunction()
        if not self.s.at_end():
            raise self.s.error(f"unexpected {self.s.peek()!r}")
        return predicate

    def conjunction(self) -> LogPredicate:
        terms = [self.disjunction()]
        while True:
            if self.s.keyword("AND"):
                terms.append(self.disjunction())
            elif not self.s.at_end() and self.s.peek() != ")":
                terms.append(self.disjunction())  # juxtaposition
            else:
                break
        if len(terms) == 1:
            return terms[0]
        return lambda entry: all(term(entry) for term in terms)

    def disjunction(self) -> LogPredicate:
        terms = [self.unary()]
        while self.s.keyword("OR"):
            terms.append(self.unary())
        if len(terms) == 1:
            return terms[0]
        return lambda entry: any(term(entry) for term in terms)

    def unary(self) -> LogPredicate:
        negated = False
        while True:
            if self.s.keyword("NOT"):
                negated = not negated
            elif self.s.peek() == "-":
                self.s.pos += 1
                negated = not negated
            else:
                break
        inner = self.primary()
        if negated:
            return lambda entry: not inner(entry)
        return inner

    def primary(self) -> LogPredicate:
        ch = self.s.peek()
        if not ch:
            raise self.s.error("expected a comparison, found the end of the filter")
        if ch == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.s.error(f"more than {MAX_DEPTH} nested parentheses")
            self.s.pos += 1
            inner = self.conjunction()
            if self.s.peek() != ")":
                raise self.s.error("expected ')'")
            self.s.pos += 1
            self.depth -= 1
            return inner
        if ch == ")":
            raise self.s.error("unexpected ')'")
        if ch in _OPERATOR_CHARS:
            raise self.s.error(f"expected a field or a search term before {ch!r}")
        path, pos = _field_name(self.s)
        if path in ("AND", "OR", "NOT"):
            raise self.s.error(f"{path} needs a term on each side", pos)
        op = self.s.operator()
        if op is None:
            return self._search(path)
        return _comparison(self.s, path, pos, op)

    @staticmethod
    def _search(term: str) -> LogPredicate:
        needle = term.lower()

        def has(entry: Mapping[str, Any]) -> bool:
            payload = entry.get("payload")
            return isinstance(payload, str) and needle in payload.lower()

        return has


def compile_log_filter(text: str) -> LogPredicate:
    """Compile a Logging filter into a predicate over an entry's field map (see the module doc)."""
    if len(text) > MAX_FILTER_CHARS:
        raise LogFilterError(text, MAX_FILTER_CHARS, f"a filter is at most {MAX_FILTER_CHARS} characters")
    return _Parser(text).parse()
