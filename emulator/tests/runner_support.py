"""What the runner tests share: pools of the trainer scripts, and polling for a job's end and for
processes (the runner on a temporary store is conftest's `env` fixture)."""

from __future__ import annotations

import io
import os
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.runtime.runner import Runner

__all__ = [
    "PARENT",
    "TRAINERS",
    "alive",
    "create",
    "finished",
    "in_groups",
    "make_sdist",
    "pool",
    "script_pool",
    "wait_for",
]

TRAINERS = Path(__file__).parent / "trainers"
PARENT = "projects/p/locations/us-central1"


def wait_for(check: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def pool(script: str, count: int = 1, *args: str, record: Path | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "imageUri": "local/trainer:1",
        "command": [sys.executable, str(TRAINERS / script)],
        "args": list(args),
    }
    if record is not None:
        container["env"] = [{"name": "RECORD_DIR", "value": str(record)}]
    return {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": str(count),
        "containerSpec": container,
    }


def create(store: JobStore, runner: Runner, spec: dict[str, Any], name: str = "job") -> str:
    job = store.insert("customJobs", PARENT, {"displayName": name, "jobSpec": spec})
    runner.submit(job["name"])
    return str(job["name"])


def finished(store: JobStore, name: str, timeout: float = 30.0) -> dict[str, Any]:
    terminal = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}
    return dict(
        wait_for(lambda: (j := store.get(name))["state"] in terminal and j, timeout, f"{name} to end")
    )


def alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def in_groups(pgids: set[int]) -> list[int]:
    """Live processes (not zombies) of the given process groups."""
    out = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) in pgids and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    return out


def script_pool(code: str, count: int = 1) -> dict[str, Any]:
    """A pool whose replicas run `python -c code`."""
    return {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": str(count),
        "containerSpec": {"imageUri": "local/trainer:1", "command": [sys.executable, "-c", code]},
    }


def make_sdist(path: Path, name: str, task_code: str, setup_prelude: str = "") -> Path:
    """A setuptools sdist of package ``name`` (module ``<name>.task`` running ``task_code``), built by
    hand; ``setup_prelude`` runs at the top of its ``setup.py``."""
    sdist = path / f"{name}-0.1.tar.gz"
    files = {
        "setup.py": setup_prelude
        + f"from setuptools import setup\nsetup(name='{name}', version='0.1', packages=['{name}'])\n",
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n",
        f"{name}/__init__.py": "",
        f"{name}/task.py": task_code,
    }
    with tarfile.open(sdist, "w:gz") as tf:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-0.1/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return sdist
