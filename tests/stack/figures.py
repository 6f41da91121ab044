"""Figures of the reliability runs, merged into one JSON file that ``docs/reliability.md`` is made from.

Each test records its numbers under a section; the file keeps the latest value of every figure, with
the time of the run, so a partial run updates only what it measured.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["FIGURES_PATH", "Figures"]

#: where this run's figures go: ``AVD_FIGURES`` when set (``make unit`` and ``make test-stack`` set it to
#: the committed ``scripts/stack/figures.json``, which ``docs/reliability.md`` is generated from), else a
#: file in the temporary directory, so a plain ``pytest`` run never writes into the checkout
FIGURES_PATH = Path(
    os.environ.get("AVD_FIGURES")
    or Path(tempfile.gettempdir()) / f"airflow-vertex-dist-figures-{os.getuid()}.json"
)


class Figures:
    @staticmethod
    def load() -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(FIGURES_PATH.read_text())
            return data
        except (OSError, ValueError):
            return {}

    @classmethod
    def record(cls, section: str, key: str, value: Any) -> None:
        """Merge one figure into the file. Test processes running side by side (pytest-xdist workers)
        each hold an exclusive lock on a lock file beside it for the read-merge-write, so no figure
        another one recorded is lost."""
        FIGURES_PATH.parent.mkdir(parents=True, exist_ok=True)
        with open(FIGURES_PATH.with_name(FIGURES_PATH.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = cls.load()
            data.setdefault(section, {})[key] = value
            data.setdefault("_updated", {})[section] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            tmp = FIGURES_PATH.with_name(f"{FIGURES_PATH.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
            tmp.replace(FIGURES_PATH)
