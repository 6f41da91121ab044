"""What a Cloud Logging filter (query.py) compiles to: ``LogQuery``, a predicate over an entry's fields
with what it pins down (the ``resource.labels.job_id``/``task_name`` values, the timestamp range), and
the terms it is built of: one comparison of a field with a value (``atom``: severities by level, times
as times, numbers as numbers, text case-folded), a global search term, ``log_id()``, and their
conjunction, disjunction and negation. The ``=`` values of one text field joined by OR merge into one
set lookup, and each entry's text is case-folded once however many terms read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from vertex_emulator.cloud_logging.query_scan import TIME_FIELDS, LogFilterError
from vertex_emulator.core.jobkinds import SEVERITIES
from vertex_emulator.core.timefmt import rfc3339_nanos

__all__ = [
    "HINT_FIELDS",
    "LogPredicate",
    "LogQuery",
    "atom",
    "compare_values",
    "conjoin",
    "disjoin",
    "log_id_term",
    "negate",
    "search_term",
    "severity_number",
]

#: the fields whose ``=`` values ``LogQuery.sets`` collects (case-folded)
HINT_FIELDS = ("resource.labels.job_id", "resource.labels.task_name")

#: an entry as the evaluator sees it: ``field path -> value`` (a str, an int for severity/times, or a
#: JSON scalar for ``jsonPayload`` keys).
LogPredicate = Callable[[Mapping[str, Any]], bool]

#: fields whose values are always text: their ``=`` values joined by OR merge into one set lookup
_TEXT_PREFIXES = ("resource.labels.", "labels.")
_TEXT_FIELDS = frozenset({"logName", "insertId", "textPayload", "resource.type"})


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


def conjoin(parts: list[LogQuery]) -> LogQuery:
    """``a AND b ...``: every part holds; the sets intersect and the time ranges narrow."""
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


def disjoin(parts: list[LogQuery]) -> LogQuery:
    """``a OR b ...``: some part holds; the sets and time ranges are those every part pins down, joined."""
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


def negate(part: LogQuery) -> LogQuery:
    """``NOT a``: pins nothing down."""
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


def atom(text: str, path: str, op: str, value: str, value_pos: int) -> LogQuery:
    """One comparison of ``path`` with one value (``compare_values``, the entry's text folded once);
    ``text`` (the filter) and ``value_pos`` place its error."""
    if op == ":" and value == "*":
        return LogQuery(lambda entry: entry.get(path) is not None)
    if path == "severity":
        level = severity_number(value, text=text, pos=value_pos)
        return LogQuery(lambda entry: _order(op, entry["severity"], level))
    if path in TIME_FIELDS:
        try:
            nanos = rfc3339_nanos(value)
        except ValueError:
            raise LogFilterError(
                text,
                value_pos,
                f'{path} must be compared with an RFC 3339 time like "2024-05-18T00:00:00Z" (got {value!r})',
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


def search_term(term: str) -> LogQuery:
    """A global restriction: some text field of the entry holds ``term`` (case-insensitive)."""
    needle = term.casefold()
    return LogQuery(lambda entry: any(needle in text for text in _memo(entry, "texts", _texts)))


def log_id_term(log_id: str) -> LogQuery:
    """``log_id("ID")``: the entry's ``logName`` is ``projects/P/logs/ID`` (case-insensitive)."""
    wanted = log_id.casefold()
    return LogQuery(lambda entry: _memo(entry, "log_id", _entry_log_id) == wanted)


def _entry_log_id(entry: Mapping[str, Any]) -> str | None:
    """The LOG_ID of the entry's ``logName``, percent-decoded and case-folded."""
    name = entry.get("logName")
    if not isinstance(name, str) or "/logs/" not in name:
        return None
    return unquote(name.split("/logs/", 1)[1]).casefold()
