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

The scanner is query_scan.py; what a filter compiles to (``LogQuery`` and its terms) is query_terms.py;
this module is the parser, with the limits.
"""

from __future__ import annotations

from collections.abc import Callable

from vertex_emulator.cloud_logging.query_scan import (
    OPERATOR_CHARS,
    LogFilterError,
    Scanner,
    check_field,
    field_name,
)
from vertex_emulator.cloud_logging.query_terms import (
    HINT_FIELDS,
    LogPredicate,
    LogQuery,
    atom,
    compare_values,
    conjoin,
    disjoin,
    log_id_term,
    negate,
    search_term,
    severity_number,
)

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
#: the reference's functions the emulator does not evaluate (named in the error)
_KNOWN_FUNCTIONS = frozenset({"sample", "search", "cast", "regex_extract", "ip_in_net"})


def _too_many(text: str, terms: int) -> LogFilterError:
    return LogFilterError(
        text,
        0,
        f"{terms} comparisons and search terms, more than {MAX_TERMS} (the = values of one field joined "
        "by OR count once): split it into several requests",
    )


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = Scanner(text)
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
        return parts[0] if len(parts) == 1 else conjoin(parts)

    def disjunction(self, term: Callable[[], LogQuery]) -> LogQuery:
        parts = [term()]
        while self.s.keyword("OR"):
            parts.append(term())
        return parts[0] if len(parts) == 1 else disjoin(parts)

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
        return negate(inner) if negated else inner

    def primary(self) -> LogQuery:
        ch = self.s.peek()
        if not ch:
            raise self.s.error("expected a comparison, found the end of the filter")
        if ch == "(":
            return self.group(self.unary)
        if ch == ")":
            raise self.s.error("unexpected ')'")
        if ch in OPERATOR_CHARS:
            raise self.s.error(f"expected a field or a search term before {ch!r}")
        quoted = ch in ('"', "'")
        path, pos = field_name(self.s)
        if path in ("AND", "OR", "NOT"):
            raise self.s.error(f"{path} needs a term on each side", pos)
        if not quoted and self.s.pos < len(self.s.text) and self.s.text[self.s.pos] == "(":
            return self.term(self.function(path, pos))
        op = self.s.operator()
        if op is None:
            return self.term(search_term(path))
        if op in ("=~", "!~"):
            raise self.s.error("regular expressions (=~, !~) are not supported by the emulator", pos)
        check_field(self.s, path, pos)
        if self.s.peek() == "(":
            return self.group(lambda: self.value_term(path, op))
        value, value_pos = self.s.value(f"{path}{op}")
        return self.term(atom(self.s, path, op, value, value_pos))

    def value_term(self, path: str, op: str) -> LogQuery:
        """One term of a value group: ``[NOT] value`` or a nested ``( ... )``."""
        negated = self.negations()
        if self.s.peek() == "(":
            inner = self.group(lambda: self.value_term(path, op))
        else:
            value, value_pos = self.s.value(f"{path}{op}")
            if value in ("AND", "OR"):
                raise self.s.error(f"{value} needs a value on each side", value_pos)
            inner = self.term(atom(self.s, path, op, value, value_pos))
        return negate(inner) if negated else inner

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
        return log_id_term(log_id)


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
