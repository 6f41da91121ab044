"""How deeply a JSON text nests, found in linear time before it is parsed.

A regular expression that cut string literals out with ``"[^"\\]*(?:\\.[^"\\]*)*"`` failed on an
unterminated string only after scanning to the end, from every quote in turn: a 58 KiB body of
escaped quotes took 9 s (quadratic). Here the escapes go first (two ``bytes.replace`` passes), then a
string literal's match always succeeds where it starts (it may end at the end of the text), so each
byte is scanned once; the nesting is then found from
the lengths of the runs of opening and closing brackets, with no Python step per byte.
"""

from __future__ import annotations

import re
from itertools import accumulate
from operator import sub

__all__ = ["json_depth"]

#: once the escapes are removed, a string literal is a quote, anything but a quote, and a quote or the end
#: of the text: a match never fails where it starts, so nothing is scanned twice. (Possessive quantifiers
#: would do it in one pattern, but they are Python 3.11+, and the package supports 3.10.)
_JSON_STRING = re.compile(rb'"[^"]*(?:"|\Z)')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_ONE_KIND = bytes.maketrans(b"{}", b"[]")
_RUNS = re.compile(rb"\[+|\]+")


def json_depth(raw: bytes, limit: int | None = None) -> int:
    """How deeply the arrays and objects of ``raw`` nest (brackets inside strings do not count).

    For text that is not JSON, an upper bound (unmatched opening brackets count as levels). ``limit``
    is accepted for callers that only need to know whether a limit is passed; the answer is exact.
    """
    # escapes first, so no quote they escape is left: a run of backslashes pairs from its left (an
    # escaped backslash each), and a backslash left over escapes the character after it; only an
    # escaped quote matters here. Both are single C passes over the text.
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = _JSON_STRING.sub(b"", unescaped).translate(_ONE_KIND, _NOT_BRACKETS)
    peeled = 0
    # innermost pairs first, a layer per pass, while a pass shrinks the text by a quarter or more (at
    # most 4 lengths copied in all): "[][][]..." would otherwise make one run per byte below
    while brackets:
        inner = brackets.replace(b"[]", b"")
        if len(inner) * 4 > len(brackets) * 3:
            break
        brackets, peeled = inner, peeled + 1
    # runs of "[" and of "]" alternate: the depth after each run of "[" is what opened so far minus
    # what closed before it (every loop below runs in C: no Python step per byte)
    runs = list(map(len, _RUNS.findall(brackets)))
    if not runs:
        return peeled
    first = 0 if brackets[:1] == b"[" else 1
    opened = list(accumulate(runs[first::2]))
    closed = [0, *accumulate(runs[first + 1 :: 2])] if first == 0 else list(accumulate(runs[0::2]))
    return peeled + max(0, max(map(sub, opened, closed), default=0))
