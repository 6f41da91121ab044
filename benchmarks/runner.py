"""Running a benchmark step in a child interpreter (the project's or the anchor's) and reading its JSON."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["BENCH_DIR", "ChildError", "call_delta", "child_env", "run_json"]

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
