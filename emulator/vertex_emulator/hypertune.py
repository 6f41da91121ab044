"""cloudml-hypertune metrics files as v1 Measurements (for the emulator's tuning trials).

Training code reports metrics with the ``cloudml-hypertune`` library, which appends JSON lines to the
replica's ``CLOUD_ML_HP_METRIC_FILE``: ``{"timestamp": ..., "trial": "3", "<metric_id>": "0.91",
"global_step": "100", "checkpoint_path": ""}`` (values are strings). These functions read such a
file and turn its lines into the trial's ``measurements``, its ``finalMeasurement`` and the curves
the early-stopping rules compare (tuning.py says when each is used).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["curve", "final_measurement", "measurements", "read_hypertune"]


def read_hypertune(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a cloudml-hypertune metrics file, in order; unreadable lines are skipped."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


def _value(line: Mapping[str, Any], metric_id: str) -> float | None:
    raw = line.get(metric_id)
    if raw is None:
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _step(line: Mapping[str, Any]) -> str:
    try:
        return str(int(float(line.get("global_step") or 0)))
    except (TypeError, ValueError):
        return "0"


def _elapsed(line: Mapping[str, Any], started: float | None) -> float | None:
    """Seconds from the trial's start to the line's cloudml-hypertune ``timestamp`` (None if unknown)."""
    if started is None:
        return None
    try:
        stamp = float(line.get("timestamp"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return max(0.0, stamp - started) if math.isfinite(stamp) else None


def _with_elapsed(
    measurement: dict[str, Any], line: Mapping[str, Any], started: float | None
) -> dict[str, Any]:
    elapsed = _elapsed(line, started)
    if elapsed is not None:
        measurement["elapsedDuration"] = f"{elapsed:.3f}s"
    return measurement


def measurements(
    lines: Sequence[Mapping[str, Any]], metrics: Sequence[Mapping[str, Any]], started: float | None = None
) -> list[dict[str, Any]]:
    """Every reported line as a v1 Measurement (only the study's metrics); with the trial's start
    time (``time.time()``), each carries its ``elapsedDuration``."""
    out: list[dict[str, Any]] = []
    for line in lines:
        found = [
            {"metricId": m["metricId"], "value": v}
            for m in metrics
            if (v := _value(line, str(m["metricId"]))) is not None
        ]
        if found:
            out.append(_with_elapsed({"stepCount": _step(line), "metrics": found}, line, started))
    return out


def final_measurement(
    lines: Sequence[Mapping[str, Any]],
    metrics: Sequence[Mapping[str, Any]],
    selection: str = "LAST_MEASUREMENT",
    started: float | None = None,
) -> dict[str, Any] | None:
    """The trial's final Measurement per the study's selection type, or None when nothing was reported."""
    best = selection == "BEST_MEASUREMENT"
    chosen: list[dict[str, Any]] = []
    step: str | None = None
    first_line: Mapping[str, Any] | None = None
    for m in metrics:
        metric_id = str(m["metricId"])
        maximize = str(m.get("goal") or "MAXIMIZE") != "MINIMIZE"
        pick: tuple[float, Mapping[str, Any]] | None = None
        for line in lines:
            v = _value(line, metric_id)
            if v is None:
                continue
            if pick is None or not best or (v > pick[0] if maximize else v < pick[0]):
                pick = (v, line)
        if pick is None:
            continue
        chosen.append({"metricId": metric_id, "value": pick[0]})
        if step is None:
            step = _step(pick[1])
            first_line = pick[1]
    if not chosen:
        return None
    return _with_elapsed({"stepCount": step or "0", "metrics": chosen}, first_line or {}, started)


def curve(
    lines: Sequence[Mapping[str, Any]], metric_id: str, started: float | None = None
) -> list[tuple[float, float]]:
    """A trial's ``(global_step, value)`` points for ``metric_id``, in reporting order; with the
    trial's start time, ``(elapsed seconds, value)`` instead (``useElapsedDuration``)."""
    out: list[tuple[float, float]] = []
    for line in lines:
        value = _value(line, metric_id)
        if value is None:
            continue
        x = float(_step(line)) if started is None else _elapsed(line, started)
        if x is not None:
            out.append((x, value))
    return out
