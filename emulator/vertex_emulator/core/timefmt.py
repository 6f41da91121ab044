"""RFC 3339 times as the Vertex AI, Cloud Logging and Cloud Storage JSON forms write them
(``2026-01-02T03:04:05.123456Z``), and protobuf ``Duration`` strings (``"3600s"``).

The emulator's own copy: it shares no code with any client (it meets them over the wire only), so a
client's mistake in reading a time cannot be hidden by the same mistake here.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

__all__ = [
    "format_rfc3339",
    "format_rfc3339_nanos",
    "now_rfc3339",
    "parse_duration_seconds",
    "parse_rfc3339",
    "rfc3339_nanos",
]

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
#: google.protobuf.Duration's JSON form: seconds with up to 9 fraction digits, then "s"
#: (protobuf/src/google/protobuf/duration.proto, "JSON Mapping").
_DURATION_RE = re.compile(r"^(-?)(\d{1,12})(?:\.(\d{1,9}))?s$")
#: Duration.seconds must be within +-315,576,000,000 (duration.proto: "approximately +-10,000 years").
MAX_DURATION_SECONDS = 315_576_000_000
_DIGITS_RE = re.compile(r"[0-9]*")


def format_rfc3339(when: datetime) -> str:
    """An aware datetime in UTC, microseconds, ``Z``."""
    return when.astimezone(timezone.utc).strftime(_FORMAT)


def now_rfc3339() -> str:
    """The current UTC time, microseconds, ``Z``."""
    return datetime.now(timezone.utc).strftime(_FORMAT)


def format_rfc3339_nanos(nanos: int) -> str:
    """Integer nanoseconds since the epoch, all 9 fraction digits: ``2026-01-02T03:04:05.123456789Z``."""
    seconds, frac = divmod(nanos, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{frac:09d}Z"


def _split_fraction(text: str) -> tuple[str, str, str]:
    """``head``, the fraction digits (maybe empty; ASCII, as RFC 3339's ``DIGIT``) and what follows
    them, in one scan at the regex engine's speed (a value of 400,000 digits is read in linear time)."""
    head, dot, rest = text.partition(".")
    if not dot:
        return text, "", ""
    match = _DIGITS_RE.match(rest)
    end = match.end() if match else 0
    return head, rest[:end], rest[end:]


def parse_rfc3339(value: str) -> datetime:
    """An RFC 3339 timestamp (``Z`` or a numeric offset, any number of fraction digits) as an aware
    datetime; ``ValueError`` when it is not one or has no time zone."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    head, digits, rest = _split_fraction(text)
    if digits:
        text = f"{head}.{(digits + '000000')[:6]}{rest}"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp {value!r} has no time zone (RFC 3339 needs 'Z' or an offset)")
    return parsed


def rfc3339_nanos(value: str) -> int:
    """An RFC 3339 timestamp as integer nanoseconds since the epoch (all 9 fraction digits kept)."""
    whole = parse_rfc3339(value).replace(microsecond=0)
    _, digits, _ = _split_fraction(value.strip())
    nanos = int((digits + "000000000")[:9]) if digits else 0
    return int(whole.timestamp()) * 1_000_000_000 + nanos


def parse_duration_seconds(text: str) -> float | None:
    """A Duration's JSON form (``"3600s"``, ``"1.5s"``) in seconds, or ``None`` when ``text`` is not
    one or is out of the proto's range."""
    match = _DURATION_RE.match(text.strip())
    if match is None:
        return None
    seconds = int(match.group(2))
    if seconds > MAX_DURATION_SECONDS:
        return None
    value = seconds + int((match.group(3) or "0").ljust(9, "0")) / 1e9
    return -value if match.group(1) else value
