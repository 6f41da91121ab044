"""Times as the job view shows them: every time is a ``<time datetime='...'>`` whose text is the
instant in Airflow's own format (``YYYY-MM-DD HH:mm:ss``) and in ``[api] default_ui_timezone`` (what
the page says without its script); the page's script then shows it in the timezone the user chose in
Airflow's UI (its ``timezone`` key in the origin's local storage), as Airflow's UI does. Durations are
``1h 02m 03s`` / ``2m 03s``; a running job's elapsed time counts up in the page."""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from typing import Any

UTC = timezone.utc

__all__ = ["AIRFLOW_FORMAT", "duration", "parse", "seconds_between", "shown", "ui_timezone"]

#: Airflow's UI date format (dayjs ``YYYY-MM-DD HH:mm:ss``), in strftime's words
AIRFLOW_FORMAT = "%Y-%m-%d %H:%M:%S"


def parse(value: Any) -> datetime | None:
    """An RFC 3339 time of the API (``...Z``, fractions of any length) as an aware datetime; None for
    anything else."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not value:
        return None
    text = str(value).strip().replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # Python before 3.11 wants 6 digits at most; the API gives 0 to 9
        digits = "".join(c for c in rest if c.isdigit())
        text = f"{head}.{digits[:6].ljust(6, '0')}{rest[len(digits) :]}"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def ui_timezone() -> tzinfo:
    """Airflow's ``[api] default_ui_timezone`` (UTC when unset, ``system`` or unknown)."""
    try:
        from zoneinfo import ZoneInfo

        from airflow_vertex_dist._compat import conf

        name = conf.get("api", "default_ui_timezone", fallback="UTC") or "UTC"
        return UTC if name.lower() in ("utc", "system") else ZoneInfo(name)
    except Exception:  # a missing or unknown zone: the page still shows UTC, and says so
        return UTC


def shown(value: Any, zone: tzinfo = UTC) -> dict[str, str]:
    """``{"iso": <the instant in UTC, RFC 3339>, "text": <Airflow's format in zone, with its
    abbreviation>}``; both ``""`` when ``value`` is no time."""
    when = parse(value)
    if when is None:
        return {"iso": "", "text": str(value or "")}
    local = when.astimezone(zone)
    return {
        "iso": when.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "text": f"{local.strftime(AIRFLOW_FORMAT)} {local.tzname() or ''}".rstrip(),
    }


def seconds_between(start: Any, end: Any) -> float | None:
    """Seconds from ``start`` to ``end`` (either a time or an RFC 3339 string), None if one is none."""
    a, b = parse(start), parse(end)
    return None if a is None or b is None else (b - a).total_seconds()


def duration(seconds: float | None) -> str:
    """``1h 02m 03s``, ``2m 03s``; ``""`` for None."""
    if seconds is None:
        return ""
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"
