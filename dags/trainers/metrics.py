"""Report a hyperparameter-tuning metric the way Vertex AI reads it (cloudml-hypertune).

``report_metric`` uses the ``hypertune`` library when it is importable. Without it, it writes the
same thing the library writes: ``CLOUD_ML_HP_METRIC_FILE`` (default ``/tmp/hypertune/output.metrics``)
rewritten with the last 100 reports of this process, one JSON object per line, keys sorted::

    {"checkpoint_path": "", "global_step": "100", "accuracy": "0.91", "timestamp": 1.7e9, "trial": "3"}

(values are strings, except ``timestamp``; ``trial`` is ``CLOUD_ML_TRIAL_ID`` or ``"0"``).
"""

from __future__ import annotations

import collections
import json
import os
import time
from typing import Any

__all__ = ["DEFAULT_METRIC_PATH", "MetricWriter", "report_metric"]

DEFAULT_METRIC_PATH = "/tmp/hypertune/output.metrics"
_MAX_ENTRIES = 100
_reporter: Any = None


class MetricWriter:
    """The standard-library stand-in for ``hypertune.HyperTune`` (same file, same format)."""

    def __init__(self) -> None:
        self.metric_path = os.environ.get("CLOUD_ML_HP_METRIC_FILE", DEFAULT_METRIC_PATH)
        parent = os.path.dirname(self.metric_path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        self.trial_id = os.environ.get("CLOUD_ML_TRIAL_ID", 0)
        self.entries: collections.deque[dict[str, Any]] = collections.deque(maxlen=_MAX_ENTRIES)

    def report_hyperparameter_tuning_metric(
        self,
        hyperparameter_metric_tag: str,
        metric_value: float,
        global_step: int | None = None,
        checkpoint_path: str = "",
    ) -> None:
        tag = hyperparameter_metric_tag or "training/hptuning/metric"
        self.entries.append(
            {
                "timestamp": time.time(),
                "trial": str(self.trial_id),
                tag: str(float(metric_value)),
                "global_step": str(int(global_step) if global_step else 0),
                "checkpoint_path": checkpoint_path,
            }
        )
        with open(self.metric_path, "w") as fh:
            for entry in self.entries:
                fh.write(json.dumps(entry, sort_keys=True) + "\n")


def _make_reporter() -> Any:
    try:
        import hypertune
    except ImportError:
        return MetricWriter()
    return hypertune.HyperTune()


def report_metric(metric_id: str, value: float, step: int | None = None) -> str:
    """Report ``value`` for ``metric_id`` at ``step``; returns the metric file written.

    One reporter per process, as the library expects (it rewrites the file with its history).
    """
    global _reporter
    if _reporter is None:
        _reporter = _make_reporter()
    _reporter.report_hyperparameter_tuning_metric(metric_id, float(value), global_step=step)
    return str(_reporter.metric_path)
