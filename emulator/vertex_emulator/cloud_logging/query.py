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

The filter is read by the parser both filter languages share (core/filtering/parse.py) from the tokens
of query_scan.py; what a filter compiles to (``LogQuery`` and its terms) is query_terms.py; this module
is the language's grammar (its limits and its field table) and the evaluation of the parsed tree.
"""

from __future__ import annotations

from vertex_emulator.cloud_logging.query_scan import LogFilterError, LogSource, check_field
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
from vertex_emulator.core.filtering import Grammar, Restriction, Token, fold, parse

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


def _too_many(terms: int) -> str:
    return (
        f"{terms} comparisons and search terms, more than {MAX_TERMS} (the = values of one field joined "
        "by OR count once): split it into several requests"
    )


def _unexpected(tok: Token) -> str:
    """Where a term should be: the end, a ``)``, or ``AND``/``OR`` (a ``NOT`` is always read)."""
    if tok.kind == "end":
        return "expected a comparison, found the end of the filter"
    if tok.kind == ")":
        return "unexpected ')'"
    return f"{tok.text} needs a term on each side"


def _leaf(text: str, r: Restriction) -> LogQuery:
    """The field table: a search term, ``log_id()`` or one comparison (``atom``)."""
    if r.op is None:
        return search_term(r.field)
    if r.op == "()":
        return log_id_term(r.value)
    return atom(text, r.field, r.op, r.value, r.value_pos)


#: Cloud Logging's structure: read as it parses; a sequence goes on at anything but the end or ``)``;
#: negations repeat; value groups (``field = (a OR b)``), functions and search terms; the ``=`` values
#: of one text field count once (they merge into one set lookup).
_GRAMMAR: Grammar[LogQuery] = Grammar(
    error=LogFilterError,
    leaf=_leaf,
    unexpected=_unexpected,
    max_chars=MAX_FILTER_CHARS,
    too_long=f"a filter is at most {MAX_FILTER_CHARS} characters",
    max_depth=MAX_DEPTH,
    too_deep=f"more than {MAX_DEPTH} nested parentheses",
    max_terms=MAX_TERMS,
    too_many=_too_many,
    counts=lambda query: query.eq is None,
    value_groups=True,
    field_rule=check_field,
)


def parse_log_filter(text: str) -> LogQuery:
    """Compile a Logging filter (see the module doc); ``LogFilterError`` when it cannot be."""
    tree = parse(text, _GRAMMAR, LogSource)
    if tree is None:
        return LogQuery(lambda entry: True, cost=0)
    query = fold(tree, conjoin, disjoin, negate, lambda leaf: leaf)
    if query.cost > MAX_TERMS:
        raise LogFilterError(text, 0, _too_many(query.cost))
    return query


def compile_log_filter(text: str) -> LogPredicate:
    """The predicate of ``parse_log_filter(text)``."""
    return parse_log_filter(text).predicate
