"""The JobService List ``filter`` language: a real parser and evaluator over stored v1 JSON jobs.

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
from dataclasses import dataclass
from typing import Any

from vertex_emulator.core.filtering import Cursor, FilterSyntaxError, Lexicon
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


@dataclass(frozen=True)
class _Token:
    kind: str  # "(", ")", "AND", "OR", "NOT", "-", "field", "cmp", "value", "end"
    text: str
    pos: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    cursor = Cursor(text, _LEXICON)
    while not cursor.at_end():
        pos = cursor.pos
        if tokens and tokens[-1].kind == "cmp":  # a value follows every comparison operator
            value, _ = cursor.literal(_VALUE_MISSING)
            tokens.append(_Token("value", value, pos))
            continue
        ch = text[pos]
        if ch in "()-":
            cursor.pos += 1
            tokens.append(_Token(ch, ch, pos))
            continue
        cmp = cursor.operator()
        if cmp is not None:
            tokens.append(_Token("cmp", cmp, pos))
            continue
        word = cursor.match(_FIELD_RE)
        if word is None:
            raise cursor.error(f"unexpected character {ch!r}")
        tokens.append(_Token(word if word in _KEYWORDS else "field", word, pos))
    if tokens and tokens[-1].kind == "cmp":
        raise cursor.error(_VALUE_MISSING, len(text))
    tokens.append(_Token("end", "", len(text)))
    return tokens


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


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        if len(text) > MAX_FILTER_CHARS:
            raise FilterError(text, MAX_FILTER_CHARS, f"longer than {MAX_FILTER_CHARS} characters")
        self.tokens = _tokenize(text)
        terms = sum(1 for tok in self.tokens if tok.kind == "cmp")
        if terms > MAX_TERMS:
            raise FilterError(
                text,
                0,
                f"{terms} restrictions, more than {MAX_TERMS}: split it into several Lists",
            )
        self.i = 0
        self.depth = 0

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def error(self, tok: _Token, rule: str) -> FilterError:
        return FilterError(self.text, tok.pos, rule)

    def parse(self) -> Predicate:
        if self.peek().kind == "end":
            return lambda job: True
        pred = self.expression()
        tok = self.peek()
        if tok.kind != "end":
            raise self.error(tok, f"unexpected {tok.text!r}")
        return pred

    # expression := sequence { "AND" sequence }
    def expression(self) -> Predicate:
        parts = [self.sequence()]
        while self.peek().kind == "AND":
            self.take()
            parts.append(self.sequence())
        return parts[0] if len(parts) == 1 else (lambda job: all(p(job) for p in parts))

    # sequence := factor { factor }   (juxtaposition is AND)
    def sequence(self) -> Predicate:
        parts = [self.factor()]
        while self.peek().kind in ("(", "NOT", "-", "field"):
            parts.append(self.factor())
        return parts[0] if len(parts) == 1 else (lambda job: all(p(job) for p in parts))

    # factor := term { "OR" term }
    def factor(self) -> Predicate:
        parts = [self.term()]
        while self.peek().kind == "OR":
            self.take()
            parts.append(self.term())
        return parts[0] if len(parts) == 1 else (lambda job: any(p(job) for p in parts))

    # term := [ "NOT" | "-" ] simple
    def term(self) -> Predicate:
        if self.peek().kind in ("NOT", "-"):
            self.take()
            inner = self.simple()
            return lambda job: not inner(job)
        return self.simple()

    # simple := "(" expression ")" | restriction
    def simple(self) -> Predicate:
        tok = self.peek()
        if tok.kind == "(":
            self.take()
            if self.depth >= MAX_DEPTH:
                raise self.error(tok, f"parentheses nested deeper than {MAX_DEPTH} levels")
            if self.peek().kind == ")":
                raise self.error(self.peek(), "empty parentheses")
            self.depth += 1
            inner = self.expression()
            self.depth -= 1
            close = self.take()
            if close.kind != ")":
                raise self.error(close, "expected ')'")
            return inner
        if tok.kind != "field":
            what = "end of filter" if tok.kind == "end" else repr(tok.text)
            raise self.error(tok, f"expected a field name, '(' or NOT, got {what}")
        return self.restriction()

    def restriction(self) -> Predicate:
        field = self.take()
        cmp = self.take()
        if cmp.kind != "cmp":
            raise self.error(cmp, f"a bare value ({field.text!r}) is not supported: use FIELD OPERATOR VALUE")
        value = self.take()
        if value.kind != "value":  # pragma: no cover - the tokenizer always emits one after cmp
            raise self.error(value, "expected a value")
        name = field.text
        if name == "display_name":
            return self._display_name(cmp, value)
        if name == "state":
            return self._state(cmp, value)
        if name == "create_time":
            return self._create_time(cmp, value)
        if name == "labels":
            return self._labels_has(cmp, value)
        if name.startswith("labels."):
            return self._label(field, cmp, value)
        raise self.error(
            field,
            f"unsupported field {name!r}: filter on display_name, state, create_time or labels.KEY",
        )

    def _display_name(self, cmp: _Token, value: _Token) -> Predicate:
        want = value.text
        if cmp.text == "=":
            return lambda job: job.get("displayName", "") == want
        if cmp.text == "!=":
            return lambda job: job.get("displayName", "") != want
        if cmp.text == ":":
            matches = _glob(want)
            return lambda job: matches(job.get("displayName", ""))
        raise self.error(cmp, f"display_name supports =, != and : (got {cmp.text})")

    def _state(self, cmp: _Token, value: _Token) -> Predicate:
        want = value.text
        if want not in JOB_STATES:
            raise self.error(value, f"state must be a JOB_STATE_* name (got {want!r})")
        if cmp.text == "=":
            return lambda job: job.get("state", "JOB_STATE_UNSPECIFIED") == want
        if cmp.text == "!=":
            return lambda job: job.get("state", "JOB_STATE_UNSPECIFIED") != want
        raise self.error(cmp, f"state supports = and != (got {cmp.text})")

    def _create_time(self, cmp: _Token, value: _Token) -> Predicate:
        if len(value.text) > MAX_TIME_CHARS:
            raise self.error(
                value,
                f"create_time must be an RFC 3339 time like 2021-05-18T00:00:00Z, at most 9 fraction digits "
                f"(got {len(value.text)} characters)",
            )
        try:
            want = rfc3339_nanos(value.text)
        except ValueError:
            raise self.error(
                value, f"create_time must be an RFC 3339 time like 2021-05-18T00:00:00Z (got {value.text!r})"
            ) from None
        ops: dict[str, Callable[[int, int], bool]] = {
            "=": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
        }
        op = ops.get(cmp.text)
        if op is None:
            raise self.error(cmp, f"create_time supports =, !=, <, <=, >, >= (got {cmp.text})")

        def pred(job: Mapping[str, Any]) -> bool:
            stamp = job.get("createTime")
            return stamp is not None and op(rfc3339_nanos(stamp), want)

        return pred

    def _labels_has(self, cmp: _Token, value: _Token) -> Predicate:
        if cmp.text != ":" or not _LABEL_KEY_RE.fullmatch(value.text):
            raise self.error(cmp, "labels alone supports only 'labels:KEY' (key exists)")
        key = value.text
        return lambda job: key in (job.get("labels") or {})

    def _label(self, field: _Token, cmp: _Token, value: _Token) -> Predicate:
        key = field.text[len("labels.") :]
        if not _LABEL_KEY_RE.fullmatch(key):
            raise self.error(field, f"invalid label key {key!r} in {field.text!r}")
        want = value.text
        if cmp.text == ":" and want == "*":
            return lambda job: key in (job.get("labels") or {})
        if cmp.text in ("=", ":"):
            return lambda job: (job.get("labels") or {}).get(key) == want
        if cmp.text == "!=":
            return lambda job: (job.get("labels") or {}).get(key) != want
        raise self.error(cmp, f"labels.KEY supports =, != and :* (got {cmp.text})")


def compile_filter(text: str) -> Predicate:
    """Compile a List filter into a predicate over stored v1 JSON jobs; raises ``FilterError``."""
    return _Parser(text).parse()
