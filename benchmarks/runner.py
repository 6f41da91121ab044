"""Running a benchmark step in a child interpreter (the project's or the anchor's) and reading its JSON."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["BENCH_DIR", "ChildError", "ChildLines", "call_delta", "child_env", "run_json"]

#: This directory: child scripts are run by path, so the anchor's interpreter needs no install of them.
BENCH_DIR = Path(__file__).resolve().parent


def call_delta(after: Mapping[str, int], before: Mapping[str, int]) -> dict[str, int]:
    """The emulator's API calls between two ``call_counts()``: ``{method: calls}``, by method name,
    methods not called left out."""
    return {k: n - before.get(k, 0) for k, n in sorted(after.items()) if n != before.get(k, 0)}


class ChildError(RuntimeError):
    """A benchmark child process failed; carries the tail of its stderr."""


def child_env(airflow_home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a child: an isolated AIRFLOW_HOME, no example DAGs, unbuffered output."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIRFLOW_CONN_", "AIRFLOW__", "GOOGLE_APPLICATION_CREDENTIALS", "VIRTUAL_ENV"))
    }
    env.update(
        {
            "AIRFLOW_HOME": str(airflow_home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "True",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "",
        }
    )
    env.pop("PYTHONDONTWRITEBYTECODE")
    if extra:
        env.update(extra)
    return env


def run_json(argv: Sequence[str], *, env: Mapping[str, str], timeout: float, cwd: Path | None = None) -> Any:
    """Run ``argv``; its last stdout line is JSON, returned parsed. Raises ChildError on failure."""
    try:
        result = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, env=dict(env), cwd=cwd, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ChildError(f"{argv[0]} {' '.join(argv[1:3])}: no result within {timeout:g}s") from exc
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise ChildError(f"{' '.join(argv[:3])} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return json.loads(lines[-1])


class ChildLines:
    """The JSON phase messages of a long-running child (``{"phase": ..., ...}``, one a line on its
    stdout), read with a deadline that holds even while the child is silent: a thread moves its lines
    into a queue. ``read`` raises ChildError, with the tail of the child's stderr file, when the child
    exits or says nothing in time."""

    def __init__(self, proc: subprocess.Popen[str], name: str, stderr_path: Path) -> None:
        self.proc = proc
        self.name = name
        self.stderr_path = stderr_path
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, name=f"{name}-stdout", daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)  # the child closed its stdout: it exited

    def read(self, phase: str, deadline: float) -> dict[str, Any]:
        """The child's next message of ``phase``; ``deadline`` is on the ``time.monotonic()`` clock."""
        why = "said nothing in time"
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                why = f"exited (rc={self.proc.wait()})"
                break
            try:
                message: dict[str, Any] = json.loads(line)
            except ValueError:
                continue
            if message.get("phase") == phase:
                return message
        try:
            tail = self.stderr_path.read_text(errors="replace")[-2000:]
        except OSError:
            tail = ""
        raise ChildError(f"the {self.name} child {why} before {phase!r}:\n{tail}")
