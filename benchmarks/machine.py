"""What the report states about where it ran: CPU, cores, memory, Python and package versions."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["machine_info", "versions_of"]

_PACKAGES = (
    "apache-airflow",
    "apache-airflow-task-sdk",
    "apache-airflow-providers-google",
    "google-cloud-aiplatform",
    "grpcio",
    "protobuf",
    "pydantic",
    "airflow-vertex-dist",
)

_PROBE = """
import json, platform, sys
from importlib import metadata
out = {"python": platform.python_version()}
for name in json.loads(sys.argv[1]):
    try:
        out[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
print(json.dumps(out))
"""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return float("nan")


def machine_info() -> dict[str, Any]:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": affinity,
        "memory_gib": round(_memory_gib(), 1),
        "os": f"{platform.system()} {platform.release()}",
    }


def versions_of(python: str) -> dict[str, str]:
    """Python and package versions of the interpreter ``python`` (asked in a subprocess)."""
    result = subprocess.run(
        [python, "-c", _PROBE, json.dumps(_PACKAGES)], capture_output=True, text=True, timeout=120, check=True
    )
    versions: dict[str, str] = json.loads(result.stdout.strip().splitlines()[-1])
    return versions
