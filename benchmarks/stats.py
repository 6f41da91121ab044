"""Small statistics over a run's samples: median, min-max, percentiles, and their rendering."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Summary", "percentile", "ratio", "summarize"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linear between closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    low: float
    high: float

    def fmt(self, digits: int = 0, unit: str = "") -> str:
        """``median (min-max) unit``, or the single value when there is one sample."""
        if self.n == 0 or math.isnan(self.median):
            return "n/a"
        m = f"{self.median:,.{digits}f}"
        if self.n == 1 or self.low == self.high:
            return f"{m}{unit}"
        return f"{m}{unit} ({self.low:,.{digits}f}–{self.high:,.{digits}f})"


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        return Summary(0, math.nan, math.nan, math.nan)
    return Summary(len(values), float(statistics.median(values)), float(min(values)), float(max(values)))


def ratio(ours: float, anchor: float) -> float:
    """``ours / anchor`` (nan when the anchor is zero or missing, or either is infinite: "never")."""
    if not anchor or math.isnan(anchor) or math.isnan(ours) or math.isinf(anchor) or math.isinf(ours):
        return math.nan
    return ours / anchor
