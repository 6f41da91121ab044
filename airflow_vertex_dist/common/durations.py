"""``google.protobuf.Duration`` in its JSON form (``"3600s"``, ``"1.5s"``, ``"-0.25s"``), read and
written once for the specs (``scheduling.timeout``, the study's durations) and the emulator (which runs
the timeout it was given).
"""

from __future__ import annotations

from datetime import timedelta

from airflow_vertex_dist.common.regex import LazyRegex

__all__ = ["MAX_DURATION_S", "duration_to_api", "parse_duration"]

#: The largest whole number of seconds accepted (about 317 years).
MAX_DURATION_S = 10**10

_DURATION_RE = LazyRegex(r"^(-?\d+)(?:\.(\d{1,9}))?s$")


def parse_duration(text: str) -> timedelta | None:
    """The duration ``text`` spells (surrounding blanks ignored; fraction kept to the microsecond), or
    ``None`` when it is not in the JSON form. ``ValueError`` when its whole seconds are beyond
    ``MAX_DURATION_S`` either way."""
    match = _DURATION_RE.match(text.strip())
    if match is None:
        return None
    seconds = int(match.group(1))
    if abs(seconds) > MAX_DURATION_S:
        raise ValueError(f"duration out of range (got {text!r})")
    frac = match.group(2) or ""
    micros = int((frac + "000000")[:6]) if frac else 0
    sign = -1 if seconds < 0 or match.group(1).startswith("-") else 1
    return timedelta(seconds=seconds) + sign * timedelta(microseconds=micros)


def duration_to_api(value: timedelta) -> str:
    """Render a duration as proto JSON: ``"3600s"``, or ``"1.500000s"`` with a fraction; a negative
    one has its sign in front of both parts (``"-2.250000s"``), as protobuf writes it."""
    total_us = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if total_us < 0 else ""
    seconds, micros = divmod(abs(total_us), 1_000_000)
    if micros == 0:
        return f"{sign}{seconds}s"
    return f"{sign}{seconds}.{micros:06d}s"
