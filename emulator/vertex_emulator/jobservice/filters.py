"""The JobService List ``filter`` language over stored v1 JSON jobs: its tokenizer, its grammar for the
parser both filter languages share (core/filtering/parse.py) and its field table and evaluator.

The grammar is the AIP-160 subset that the v1 ``ListCustomJobsRequest.filter`` documents:

* ``display_name`` supports ``=``, ``!=`` and ``:`` (a wildcard pattern: ``*`` matches any run of
  characters, the pattern must match the whole name; without ``*`` it is an exact match);
* ``state`` supports ``=`` and ``!=`` against a ``JOB_STATE_*`` name;
* ``create_time`` supports ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` against an RFC 3339 time;
* ``labels.KEY=VALUE`` (equality), ``labels.KEY!=VALUE``, ``labels.KEY:*`` (key exists),
  ``labels.KEY:VALUE`` (same as ``=``) and ``labels:KEY`` (key exists);
* terms combine with ``AND``, ``OR``, ``NOT`` (or a leading ``-``), parentheses (nested at most
  ``MAX_DEPTH`` levels), and juxtaposition (``a b`` means ``a AND b``). As in AIP-160, ``OR``
  binds tighter than ``AND``: ``a AND b OR c`` is ``a AND (b OR c)``. Keywords are upper case.

A ``display_name:`` pattern is matched in linear time (no regular expression is built from it).

Values are bare words (``JOB_STATE_RUNNING``, ``2021-05-18T00:00:00Z``, ``my-label``) or quoted with
``"`` or ``'`` (backslash escapes the next character). Any other field, operator or malformed input is
rejected with a ``FilterError`` whose message names the position and the rule -- the API turns it
into INVALID_ARGUMENT.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from vertex_emulator.core.filtering import (
    Cursor,
    FilterSyntaxError,
    Grammar,
    Lexicon,
    Restriction,
    Token,
    TokenList,
    fold,
    parse,
)
from vertex_emulator.core.timefmt import rfc3339_nanos

__all__ = [
    "JOB_STATES",
    "MAX_DEPTH",
    "MAX_FILTER_CHARS",
    "MAX_TERMS",
    "MAX_TIME_CHARS",
    "FilterError",
    "Predicate",
    "compile_filter",
]

Predicate = Callable[[Mapping[str, Any]], bool]

JOB_STATES = frozenset(
    {
        "JOB_STATE_UNSPECIFIED",
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLING",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_PAUSED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_UPDATING",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
    }
)

#: how deeply parentheses may nest (deeper filters are refused, as the parser recurses per level).
MAX_DEPTH = 32

#: the longest filter parsed (characters): the emulator's own bound (Vertex AI documents none), far
#: above what ``MAX_TERMS`` restrictions on 128-character display names need.
MAX_FILTER_CHARS = 32 * 1024
#: restrictions (``field OP value``) in one filter: a List costs jobs x restrictions, so a filter of
#: thousands of ``OR`` terms is refused rather than evaluated (the emulator's own bound).
MAX_TERMS = 100
#: the longest ``create_time`` value read: RFC 3339 with 9 fraction digits and an offset is 35
#: characters (``google/protobuf/timestamp.proto``: "fractional seconds ... up to 9 digits"); a longer
#: value is refused before any parsing.
MAX_TIME_CHARS = 40

_COMPARATORS = ("<=", ">=", "!=", "=", "<", ">", ":")
_KEYWORDS = ("AND", "OR", "NOT")
_FIELD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+)*")
_LABEL_KEY_RE = re.compile(r"[A-Za-z0-9_\-]+")
_VALUE_MISSING = "expected a value after the comparison operator"


class FilterError(FilterSyntaxError):
    """A filter that does not parse or uses an unsupported field or operator."""

    def __init__(self, text: str, pos: int, rule: str) -> None:
        shown = repr(text) if len(text) <= 200 else f"{text[:200]!r}... ({len(text)} characters)"
        super().__init__(text, pos, rule, f"invalid filter {shown} at position {pos}: {rule}")


#: the List filter's text (AIP-160): any Unicode space separates tokens, there are no comments, and the
#: operators are AIP-160's comparators and ``:`` (has).
_LEXICON = Lexicon(error=FilterError, operators=_COMPARATORS)


def _tokenize(text: str) -> TokenList:
    """The whole text's tokens, before any parsing: a late token error wins over an earlier parse error."""
    tokens: list[Token] = []
    cursor = Cursor(text, _LEXICON)
    while not cursor.at_end():
        pos = cursor.pos
        if tokens and tokens[-1].kind == "op":  # a value follows every comparison operator
            value, _ = cursor.literal(_VALUE_MISSING)
            tokens.append(Token("value", value, pos))
            continue
        ch = text[pos]
        if ch in "()-":
            cursor.pos += 1
            tokens.append(Token(ch, ch, pos))
            continue
        cmp = cursor.operator()
        if cmp is not None:
            tokens.append(Token("op", cmp, pos))
            continue
        word = cursor.match(_FIELD_RE)
        if word is None:
            raise cursor.error(f"unexpected character {ch!r}")
        tokens.append(Token(word if word in _KEYWORDS else "word", word, pos))
    if tokens and tokens[-1].kind == "op":
        raise cursor.error(_VALUE_MISSING, len(text))
    tokens.append(Token("end", "", len(text)))
    return TokenList(tokens)


def _glob(pattern: str) -> Callable[[str], bool]:
    """A matcher for a ``*`` wildcard pattern over the whole string, in linear time.

    The pattern is split at ``*`` into literal pieces: the first must be a prefix, the last a
    suffix, and the ones between are found left to right with ``str.find`` (the leftmost match of
    each is always a right choice), so no backtracking regex is built from user input.
    """
    pieces = pattern.split("*")
    if len(pieces) == 1:
        return lambda name: name == pattern
    head, middle, tail = pieces[0], [p for p in pieces[1:-1] if p], pieces[-1]

    def match(name: str) -> bool:
        end = len(name) - len(tail)
        if end < len(head) or not name.startswith(head) or not name.endswith(tail):
            return False
        pos = len(head)
        for piece in middle:
            found = name.find(piece, pos, end)
            if found < 0:
                return False
            pos = found + len(piece)
        return True

    return match


def _unexpected(tok: Token) -> str:
    what = "end of filter" if tok.kind == "end" else repr(tok.text)
    return f"expected a field name, '(' or NOT, got {what}"


def _too_many(terms: int) -> str:
    return f"{terms} restrictions, more than {MAX_TERMS}: split it into several Lists"


# -- the field table: what one restriction means, as a predicate over a stored job ----------------------


def _leaf(text: str, r: Restriction) -> Predicate:
    if r.op is None:
        rule = f"a bare value ({r.field!r}) is not supported: use FIELD OPERATOR VALUE"
        raise FilterError(text, r.op_pos, rule)
    name = r.field
    if name == "display_name":
        return _display_name(text, r)
    if name == "state":
        return _state(text, r)
    if name == "create_time":
        return _create_time(text, r)
    if name == "labels":
        return _labels_has(text, r)
    if name.startswith("labels."):
        return _label(text, r)
    raise FilterError(
        text, r.pos, f"unsupported field {name!r}: filter on display_name, state, create_time or labels.KEY"
    )


def _display_name(text: str, r: Restriction) -> Predicate:
    want = r.value
    if r.op == "=":
        return lambda job: job.get("displayName", "") == want
    if r.op == "!=":
        return lambda job: job.get("displayName", "") != want
    if r.op == ":":
        matches = _glob(want)
        return lambda job: matches(job.get("displayName", ""))
    raise FilterError(text, r.op_pos, f"display_name supports =, != and : (got {r.op})")


def _state(text: str, r: Restriction) -> Predicate:
    want = r.value
    if want not in JOB_STATES:
        raise FilterError(text, r.value_pos, f"state must be a JOB_STATE_* name (got {want!r})")
    if r.op == "=":
        return lambda job: job.get("state", "JOB_STATE_UNSPECIFIED") == want
    if r.op == "!=":
        return lambda job: job.get("state", "JOB_STATE_UNSPECIFIED") != want
    raise FilterError(text, r.op_pos, f"state supports = and != (got {r.op})")


_TIME_ORDER: dict[str, Callable[[int, int], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _create_time(text: str, r: Restriction) -> Predicate:
    if len(r.value) > MAX_TIME_CHARS:
        raise FilterError(
            text,
            r.value_pos,
            f"create_time must be an RFC 3339 time like 2021-05-18T00:00:00Z, at most 9 fraction digits "
            f"(got {len(r.value)} characters)",
        )
    try:
        want = rfc3339_nanos(r.value)
    except ValueError:
        rule = f"create_time must be an RFC 3339 time like 2021-05-18T00:00:00Z (got {r.value!r})"
        raise FilterError(text, r.value_pos, rule) from None
    op = _TIME_ORDER.get(r.op or "")
    if op is None:
        raise FilterError(text, r.op_pos, f"create_time supports =, !=, <, <=, >, >= (got {r.op})")

    def pred(job: Mapping[str, Any]) -> bool:
        stamp = job.get("createTime")
        return stamp is not None and op(rfc3339_nanos(stamp), want)

    return pred


def _labels_has(text: str, r: Restriction) -> Predicate:
    if r.op != ":" or not _LABEL_KEY_RE.fullmatch(r.value):
        raise FilterError(text, r.op_pos, "labels alone supports only 'labels:KEY' (key exists)")
    key = r.value
    return lambda job: key in (job.get("labels") or {})


def _label(text: str, r: Restriction) -> Predicate:
    key = r.field[len("labels.") :]
    if not _LABEL_KEY_RE.fullmatch(key):
        raise FilterError(text, r.pos, f"invalid label key {key!r} in {r.field!r}")
    want = r.value
    if r.op == ":" and want == "*":
        return lambda job: key in (job.get("labels") or {})
    if r.op in ("=", ":"):
        return lambda job: (job.get("labels") or {}).get(key) == want
    if r.op == "!=":
        return lambda job: (job.get("labels") or {}).get(key) != want
    raise FilterError(text, r.op_pos, f"labels.KEY supports =, != and :* (got {r.op})")


#: the List filter's structure: tokenized whole first; a sequence goes on only at ``(``, ``NOT``, ``-``
#: or a field; one ``NOT`` per term; ``()`` refused; no bare values, value groups or functions.
_GRAMMAR: Grammar[Predicate] = Grammar(
    error=FilterError,
    leaf=_leaf,
    unexpected=_unexpected,
    max_chars=MAX_FILTER_CHARS,
    too_long=f"longer than {MAX_FILTER_CHARS} characters",
    max_depth=MAX_DEPTH,
    too_deep=f"parentheses nested deeper than {MAX_DEPTH} levels",
    max_terms=MAX_TERMS,
    too_many=_too_many,
    continues=lambda tok: tok.kind in ("(", "NOT", "-", "word"),
    repeated_negation=False,
    empty_parens_rule=True,
)


def _all(preds: list[Predicate]) -> Predicate:
    return lambda job: all(p(job) for p in preds)


def _any(preds: list[Predicate]) -> Predicate:
    return lambda job: any(p(job) for p in preds)


def _not(pred: Predicate) -> Predicate:
    return lambda job: not pred(job)


def compile_filter(text: str) -> Predicate:
    """Compile a List filter into a predicate over stored v1 JSON jobs; raises ``FilterError``."""
    tree = parse(text, _GRAMMAR, _tokenize)
    if tree is None:
        return lambda job: True
    return fold(tree, _all, _any, _not, lambda pred: pred)
