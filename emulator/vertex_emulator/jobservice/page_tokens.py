"""The JobService List's page tokens: what they carry, and how one sent back is checked.

A token is base64 of a flat JSON object: the parent and filter it was made for (``p``, ``f``) and the
cursor (``t``, ``n``: the create time and name of the last job of the page; the next page starts
after it). v1 ``ListCustomJobsRequest.page_token``: "Typically obtained via
ListCustomJobsResponse.next_page_token of the previous JobService.ListCustomJobs call." A token
sent back is checked before it is parsed: its size (a token carries the filter, at most
``MAX_FILTER_CHARS``) and its nesting (none), then its structure, so no token costs more than
reading it, and a bad one is INVALID_ARGUMENT naming ``page_token`` (never INTERNAL).
"""

from __future__ import annotations

import base64
import binascii
import json

from vertex_emulator.jobservice.filters import MAX_FILTER_CHARS
from vertex_emulator.server.jsonlimits import json_depth

__all__ = ["MAX_TOKEN_CHARS", "TokenError", "decode_token", "encode_token"]

#: the longest page token read: base64 of the parent, the longest filter (JSON-escaped: up to 12
#: characters each) and a cursor.
MAX_TOKEN_CHARS = 4 * (12 * MAX_FILTER_CHARS + 4096) // 3 + 4


class TokenError(ValueError):
    """A page token refused; the message names ``page_token`` (the API answers INVALID_ARGUMENT)."""


def encode_token(cursor: tuple[str, str], parent: str, filter_text: str) -> str:
    """The token of the page after ``cursor`` (create time, name) for this parent and filter."""
    created, name = cursor
    raw = json.dumps({"p": parent, "f": filter_text, "t": created, "n": name}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(token: str, parent: str, filter_text: str) -> tuple[str, str]:
    """The cursor of a page token this List returned; ``TokenError`` when it is too long, not base64
    of a flat JSON object of four strings, or made for another parent or filter."""
    bad = TokenError("page_token: not a token this List method returned")
    if len(token) > MAX_TOKEN_CHARS:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        if json_depth(raw, 1) > 1:  # one flat object: no nesting to parse
            raise bad
        data = json.loads(raw)
    except (binascii.Error, ValueError, RecursionError):
        raise bad from None
    if not isinstance(data, dict) or set(data) != {"p", "f", "t", "n"}:
        raise bad
    if not all(isinstance(value, str) for value in data.values()):
        raise bad
    if data["p"] != parent or data["f"] != filter_text:
        raise TokenError(
            "page_token: was returned for a different parent or filter; repeat the same request with it"
        )
    return data["t"], data["n"]
