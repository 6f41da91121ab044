"""Finding what a dead emulator left: processes by an environment entry (procs.leftovers)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from vertex_emulator.runtime.procs import kill_leftovers, leftovers

_SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


@pytest.fixture
def replica(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A process whose environment names a metrics file under ``tmp_path``, as a replica's does."""
    value = f"{tmp_path}/logs/123/hypertune/workerpool0-0.metrics"
    proc = subprocess.Popen(_SLEEP, env={**os.environ, "CLOUD_ML_HP_METRIC_FILE": value})
    yield proc, value
    proc.kill()
    proc.wait()


def test_a_process_is_found_by_its_variable_and_a_value_prefix(
    replica: tuple[subprocess.Popen[bytes], str], tmp_path: Path
) -> None:
    proc, value = replica
    assert leftovers(f"CLOUD_ML_HP_METRIC_FILE={tmp_path}/logs/123/") == [proc.pid]
    assert leftovers(f"CLOUD_ML_HP_METRIC_FILE={tmp_path}/logs/124/") == []
    assert leftovers(f"OTHER_NAME={tmp_path}/logs/123/") == []
    # a value prefix names the variable: processes without it are never found, even for an empty value
    assert leftovers("AVD_TEST_UNSET_VARIABLE=") == []


def test_kill_leftovers_kills_and_reports(
    replica: tuple[subprocess.Popen[bytes], str], tmp_path: Path
) -> None:
    proc, _ = replica
    killed, survivors = kill_leftovers(f"CLOUD_ML_HP_METRIC_FILE={tmp_path}/logs/123/", timeout_s=10.0)
    assert (killed, survivors) == (1, [])
    assert proc.wait(timeout=10) == -9
