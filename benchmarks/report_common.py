"""What every section of ``docs/benchmarks.md`` shares: the run's description (``RunInfo``), the goals
it is judged by (``Goals``), the anchor's name, and the formatting of cells and tables."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ANCHOR", "Goals", "RunInfo", "_find", "_met", "_num", "_secs", "_table", "_x"]


ANCHOR = "apache-airflow-providers-google"


@dataclass(frozen=True)
class Goals:
    parse_over_floor_ms: float = 50.0
    calls_per_interval_at_1000: float = 12.0
    #: the call budget of the shared poller: calls per poll interval with N jobs waiting
    budget_per_job: float = 0.01
    budget_base: float = 2.0
    #: a backfill's first submissions: wall time at most this many times the provider's
    backfill_wall_ratio: float = 1.3
    rss_per_job_kib: float = 64.0
    #: Logging reads per poll interval per triggerer, and print -> task log p50 in poll intervals
    log_calls_per_interval: float = 1.0
    log_delay_p50_intervals: float = 2.0


@dataclass
class RunInfo:
    mode: str
    started: str
    duration_s: float
    machine: dict[str, Any]
    versions: dict[str, dict[str, str]]
    settings: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _x(value: float, digits: int = 2) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}×"


def _num(value: float, digits: int = 1) -> str:
    if value is not None and math.isinf(value):
        return "never"
    return "n/a" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def _secs(value: float) -> str:
    """Seconds with two decimals, or ``never`` (an event that never came)."""
    return "never" if math.isinf(value) else f"{value:.2f} s"


def _met(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "**not met**")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def _find(items: list[Any], **match: Any) -> Any:
    for item in items:
        if all(getattr(item, k) == v for k, v in match.items()):
            return item
    return None
