"""``matchGlob`` of the Cloud Storage JSON API's ``objects.list``, matched in linear time.

Source: https://cloud.google.com/storage/docs/json_api/v1/objects/list (parameter ``matchGlob``,
"Filter results to objects and prefixes that match this glob pattern", and its section "List
objects and prefixes using glob", ``#list-object-glob``, which the stock ``google-cloud-storage``
client's ``list_blobs(match_glob=...)`` points at). The syntax read from it:

- ``*`` any run of characters within one path segment (never ``/``); ``?`` one character but ``/``;
- ``**`` any run of characters, ``/`` included; as a whole segment followed by ``/`` (``a/**/b``)
  it also matches no segment at all (``a/b``);
- ``[abc]``, ``[a-z]`` one character of the set (never ``/``); ``[!abc]`` (or ``[^abc]``) one
  character not in it; a ``]`` right after ``[`` or ``[!`` is a member;
- ``{a,b}`` either alternative (alternatives may hold wildcards and braces);
- ``\\x`` the character ``x`` itself.

The whole object name must match (``prefix`` still narrows the listing first). The page says
``delimiter`` must be absent or ``/`` with ``matchGlob`` (storage_tree refuses others). The exact
corner cases (an unclosed ``[``, ``**`` inside a segment) could not be checked against the
service offline: an unclosed ``[`` or ``{`` is refused with 400 here.

A pattern is at most ``MAX_GLOB_CHARS`` long, nests braces at most ``MAX_BRACE_DEPTH`` deep and
expands to at most ``MAX_ALTERNATIVES`` brace-free alternatives; each is matched by simulating its
automaton (no backtracking), so a match costs O(len(name) x len(pattern)) per alternative whatever
the pattern.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["MAX_ALTERNATIVES", "MAX_BRACE_DEPTH", "MAX_GLOB_CHARS", "Glob", "GlobError"]

MAX_GLOB_CHARS = 1024
MAX_ALTERNATIVES = 64
MAX_BRACE_DEPTH = 8
_CACHE_LIMIT = 100_000


class GlobError(ValueError):
    """A pattern this module refuses (the message says why)."""


@dataclass(frozen=True)
class _Token:
    #: "lit" (``chars`` is the character), "one" (``?``), "set" (``chars`` the members, ``negate``),
    #: "star" (``*``), "any" (``**``), "segs" (``**/`` at a segment start: zero or more segments)
    kind: str
    chars: frozenset[str] = frozenset()
    negate: bool = False


def _split_braces(pattern: str) -> list[str]:
    """The brace-free alternatives of ``pattern`` (``{a,b}`` expanded), at most ``MAX_ALTERNATIVES``."""
    out = [""]
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out = [o + pattern[i : i + 2] for o in out]
            i += 2
            continue
        if c == "[":
            end = _class_end(pattern, i)
            out = [o + pattern[i : end + 1] for o in out]
            i = end + 1
            continue
        if c == "{":
            end, parts = _brace_parts(pattern, i)
            expanded = [alt for part in parts for alt in _split_braces(part)]
            out = [o + alt for o in out for alt in expanded]
            if len(out) > MAX_ALTERNATIVES:
                raise GlobError(f"matchGlob: expands to more than {MAX_ALTERNATIVES} alternatives")
            i = end + 1
            continue
        if c in "},":
            out = [o + "\\" + c for o in out] if c == "}" else [o + c for o in out]
            i += 1
            continue
        out = [o + c for o in out]
        i += 1
    return out


def _brace_parts(pattern: str, start: int) -> tuple[int, list[str]]:
    """The index of the ``}`` closing the ``{`` at ``start``, and the top-level comma parts."""
    depth = 0
    parts: list[str] = []
    part_start = start + 1
    i = start
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(pattern, i) + 1
            continue
        if c == "{":
            depth += 1
            if depth > MAX_BRACE_DEPTH:
                raise GlobError(f"matchGlob: braces nest at most {MAX_BRACE_DEPTH} deep")
        elif c == "}":
            depth -= 1
            if depth == 0:
                parts.append(pattern[part_start:i])
                return i, parts
        elif c == "," and depth == 1:
            parts.append(pattern[part_start:i])
            part_start = i + 1
        i += 1
    raise GlobError(f"matchGlob: the '{{' at {start} is never closed")


def _class_end(pattern: str, start: int) -> int:
    """The index of the ``]`` closing the ``[`` at ``start``."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1  # a "]" first is a member
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "]":
            return i
        i += 1
    raise GlobError(f"matchGlob: the '[' at {start} is never closed")


def _class_token(body: str) -> _Token:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    members: set[str] = set()
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            c = body[i + 1]
            i += 1
        if i + 2 < len(body) and body[i + 1] == "-":
            high = body[i + 2]
            if ord(high) < ord(c):
                raise GlobError(f"matchGlob: the range {c}-{high} runs backwards")
            if ord(high) - ord(c) > 0x10000:
                raise GlobError(f"matchGlob: the range {c}-{high} is too wide")
            members.update(chr(o) for o in range(ord(c), ord(high) + 1))
            i += 3
            continue
        members.add(c)
        i += 1
    return _Token("set", frozenset(members), negate)


def _tokens(alternative: str) -> list[_Token]:
    out: list[_Token] = []
    i = 0
    n = len(alternative)
    while i < n:
        c = alternative[i]
        if c == "\\" and i + 1 < n:
            out.append(_Token("lit", frozenset(alternative[i + 1])))
            i += 2
        elif c == "*" and alternative.startswith("**", i):
            at_segment_start = i == 0 or alternative[i - 1] == "/"
            if at_segment_start and alternative.startswith("**/", i):
                out.append(_Token("segs"))
                i += 3
            else:
                out.append(_Token("any"))
                i += 2
            while alternative.startswith("*", i):  # "***" is "**"
                i += 1
        elif c == "*":
            out.append(_Token("star"))
            i += 1
        elif c == "?":
            out.append(_Token("one"))
            i += 1
        elif c == "[":
            end = _class_end(alternative, i)
            out.append(_class_token(alternative[i + 1 : end]))
            i = end + 1
        else:
            out.append(_Token("lit", frozenset(c)))
            i += 1
    return out


def _closure(states: Iterable[int], tokens: list[_Token]) -> set[int]:
    """``states`` and every state reachable from them without reading a character."""
    out: set[int] = set()
    todo = list(states)
    while todo:
        i = todo.pop()
        if i in out:
            continue
        out.add(i)
        if i < len(tokens) and tokens[i].kind in ("star", "any", "segs"):
            todo.append(i + 1)  # zero characters (for "segs": zero segments)
    return out


def _step(states: set[int], tokens: list[_Token], c: str) -> set[int]:
    after: set[int] = set()
    for i in states:
        if i >= len(tokens):
            continue
        tok = tokens[i]
        kind = tok.kind
        if kind == "lit":
            if c in tok.chars:
                after.add(i + 1)
        elif kind == "one":
            if c != "/":
                after.add(i + 1)
        elif kind == "set":
            if c != "/" and (c in tok.chars) != tok.negate:
                after.add(i + 1)
        elif kind == "star":
            if c != "/":
                after.add(i)
        elif kind == "any":
            after.add(i)
        elif kind == "segs":
            after.add(i)  # inside the skipped segments
            if c == "/":
                after.add(i + 1)  # ... which end with a "/"
    return _closure(after, tokens)


class Glob:
    """A compiled ``matchGlob`` pattern (one request's); ``GlobError`` when it cannot be one.

    Transitions already computed are kept (at most ``_CACHE_LIMIT``), so the names of one listing,
    which share most of their characters' steps, are matched at the cost of a lookup per character.
    """

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_GLOB_CHARS:
            raise GlobError(f"matchGlob: at most {MAX_GLOB_CHARS} characters (got {len(pattern)})")
        self.pattern = pattern
        self._alternatives = [_tokens(alt) for alt in _split_braces(pattern)]
        if sum(len(tokens) for tokens in self._alternatives) > MAX_GLOB_CHARS:
            raise GlobError(f"matchGlob: its alternatives hold more than {MAX_GLOB_CHARS} elements")
        self._cache: dict[tuple[int, frozenset[int], str], frozenset[int]] = {}

    def matches(self, name: str) -> bool:
        """Whether the whole of ``name`` matches the pattern."""
        for index, tokens in enumerate(self._alternatives):
            states = frozenset(_closure([0], tokens))
            for c in name:
                key = (index, states, c)
                after = self._cache.get(key)
                if after is None:
                    after = frozenset(_step(set(states), tokens, c))
                    if len(self._cache) < _CACHE_LIMIT:
                        self._cache[key] = after
                states = after
                if not states:
                    break
            if len(tokens) in states:
                return True
        return False
