"""cloudml-hypertune metrics files as v1 Measurements (for the emulator's tuning trials).

Training code reports metrics with the ``cloudml-hypertune`` library, which writes JSON lines to the
replica's ``CLOUD_ML_HP_METRIC_FILE``: ``{"timestamp": ..., "trial": "3", "<metric_id>": "0.91",
"global_step": "100", "checkpoint_path": ""}`` (values are strings). It does not append: it keeps its
last 100 reports in memory and rewrites the whole file with them at every report
(``hypertune/hypertune.py``: ``collections.deque(maxlen=_MAX_NUM_METRIC_ENTRIES_TO_PRESERVE)``, 100,
and ``open(self.metric_path, 'w')``), so once a trial has reported more than 100 times the file no
longer holds its first reports. ``MetricsLog`` therefore reads the file while the trial runs and
keeps every report it has seen; the functions below turn reports into the trial's
``measurements``, its ``finalMeasurement`` and the curves the early-stopping rules compare
(runtime/tuning_job.py says when each is used).
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_REPORTS",
    "READ_LIMIT",
    "MetricsLog",
    "curve",
    "final_measurement",
    "measurements",
    "read_hypertune",
]

#: how much of a metrics file one read takes, from its end (the library's file holds 100 lines).
READ_LIMIT = 1024 * 1024
#: reports a ``MetricsLog`` keeps (a trial's measurements are stored in its job); past it the oldest
#: are dropped, as the library drops its own.
MAX_REPORTS = 1_000


def _read_tail(path: Path) -> str:
    """The file's last ``READ_LIMIT`` bytes (from a line start), or ``""`` when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > READ_LIMIT:
                fh.seek(size - READ_LIMIT)
                fh.readline()  # a partial line
            return fh.read(READ_LIMIT).decode(errors="replace")
    except OSError:
        return ""


def _timestamp(item: Mapping[str, Any]) -> float:
    try:
        stamp = float(item.get("timestamp"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.inf
    return stamp if math.isfinite(stamp) else math.inf


class MetricsLog:
    """Every report one cloudml-hypertune metrics file has held while it was watched.

    ``poll`` reads the file (cheaply: only lines not seen before are parsed) and keeps its new
    reports; ``reports`` returns them all in ``timestamp`` order (reports without one last, as
    seen). A report is its line's text, which the library writes the same at every rewrite
    (``json.dumps(metric, sort_keys=True)``), so a rewrite adds nothing twice. The last line of a
    read may be cut short by a rewrite: it is read again next time. ``version`` grows whenever new
    reports are kept.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.version = 0
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, int, dict[str, Any]]] = {}
        self._bad: set[str] = set()
        self._count = 0

    def poll(self) -> bool:
        """Read the file once; True when it held reports not seen before."""
        lines = _read_tail(self.path).split("\n")
        last = len(lines) - 1  # the text after the last newline: a line the writer may not have ended
        with self._lock:
            added = False
            for index, raw in enumerate(lines):
                line = raw.strip()
                if not line or line in self._seen or line in self._bad:
                    continue
                try:
                    item = json.loads(line)
                except ValueError:
                    item = None
                if not isinstance(item, dict):
                    if index != last and len(self._bad) < MAX_REPORTS:
                        self._bad.add(line)  # not a report: never parsed again
                    continue
                self._seen[line] = (_timestamp(item), self._count, item)
                self._count += 1
                added = True
            if len(self._seen) > MAX_REPORTS:
                keep = sorted(self._seen.items(), key=lambda kv: kv[1][:2])[-MAX_REPORTS:]
                self._seen = dict(keep)
            if added:
                self.version += 1
            return added

    def reports(self) -> list[dict[str, Any]]:
        """Every report kept, oldest first."""
        with self._lock:
            entries = sorted(self._seen.values(), key=lambda entry: entry[:2])
        return [item for _, _, item in entries]


def read_hypertune(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a cloudml-hypertune metrics file as it is now, in order; unreadable lines
    are skipped. (A trial's reports are read with ``MetricsLog``, which keeps those rewritten away.)"""
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
