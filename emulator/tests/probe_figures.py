"""The security table's figures (``docs/reliability.md`` in the repository): each probe records its input
and the emulator's answer into one JSON file, in the format of the provider's ``tests/stack/figures.py``.

The file is ``AVD_FIGURES`` when set (the repository's Makefile sets it to the committed figures file),
else a file in the temporary directory, so a plain ``pytest`` run never writes into the checkout.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["FIGURES_PATH", "record"]

FIGURES_PATH = Path(
    os.environ.get("AVD_FIGURES")
    or Path(tempfile.gettempdir()) / f"airflow-vertex-dist-figures-{os.getuid()}.json"
)
SECTION = "security_probes"


def record(key: str, given: str, answer: str) -> None:
    """One row of the security table: the probe's input and what the emulator answered. Merged under an
    exclusive lock on a file beside the figures (pytest-xdist workers record side by side)."""
    FIGURES_PATH.parent.mkdir(parents=True, exist_ok=True)
    with open(FIGURES_PATH.with_name(FIGURES_PATH.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            data: dict[str, Any] = json.loads(FIGURES_PATH.read_text())
        except (OSError, ValueError):
            data = {}
        data.setdefault(SECTION, {})[key] = {"input": given, "answer": answer}
        data.setdefault("_updated", {})[SECTION] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        tmp = FIGURES_PATH.with_name(f"{FIGURES_PATH.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        tmp.replace(FIGURES_PATH)
