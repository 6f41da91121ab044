"""``dags/capacity_ladder.py`` end to end on an emulator with no A100 free in us-central1.

Both A100 rungs stock out (no on-demand nor Spot A100 free in the connection's region, and a job that
finds none fails with the service's stockout after 1 s): the ladder leaves rung 1, then rung 2, and the
week trains on rung 3, L4 in us-east1, with never more than one live job of the task.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from operators.harness import CONN_ENV, connection_env, dag_xcom, logged, run_dag, ti_state

from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES
from vertex_emulator import Capacity, testing
from vertex_emulator.app import Emulator

from .conftest import DAGS, _fresh_common

pytestmark = pytest.mark.slow

REGIONS = ("us-central1", "us-east1")
NO_A100 = {"us-central1": {"NVIDIA_TESLA_A100": 0}}


@pytest.fixture
def stocked_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, airflow_db: None) -> Iterator[Emulator]:
    """The ``examples`` emulator, with no A100 free (on demand or Spot) in us-central1."""
    monkeypatch.syspath_prepend(str(DAGS))
    monkeypatch.setenv("VERTEX_DIST_EXAMPLES_POLL_INTERVAL", "0.5")
    monkeypatch.setenv("GCS_MOUNT_ROOT", str(tmp_path / "gcs"))
    common = _fresh_common()
    capacity = Capacity(stock=NO_A100, spot_stock=NO_A100, stockout_after_s=1.0)
    with testing.running_emulator(tmp_path, image_map=common.emulator_image_map(), capacity=capacity) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        yield em
    sys.modules.pop("examples_common", None)


def jobs(em: Emulator) -> list[dict[str, Any]]:
    found = [j for r in REGIONS for j in em.store.list("customJobs", f"projects/test-project/locations/{r}")]
    return sorted(found, key=lambda j: j["createTime"])


@contextmanager
def most_live_jobs(em: Emulator) -> Iterator[list[int]]:
    """The most unfinished jobs the emulator held at any one look (every few ms while the block runs)."""
    most = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            most[0] = max(most[0], sum(1 for j in jobs(em) if j["state"] not in TERMINAL_STATES))
            time.sleep(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield most
    finally:
        stop.set()
        thread.join(timeout=10)


def test_the_week_trains_on_the_rung_that_has_capacity(
    stocked_out: Emulator, load_dags: Any, capfd: Any
) -> None:
    dag = load_dags("capacity_ladder.py")["vertex_dist_capacity_ladder"]
    assert dag.get_task("train").pool_slots == 2  # the job's GPUs, for the GPU quota pool
    when = datetime(2026, 11, 22, tzinfo=timezone.utc)
    with most_live_jobs(stocked_out) as most:
        dr = run_dag(dag, logical_date=when)
    assert ti_state(dr, "snapshot_week") == "success"
    assert ti_state(dr, "train") == "success", dr
    assert most[0] == 1  # one live job of the task at any moment

    reserved, spot, l4 = jobs(stocked_out)
    assert [j["labels"]["airflow-rung"] for j in (reserved, spot, l4)] == ["r1", "r2", "r3"]
    for job in (reserved, spot):
        assert job["name"].startswith("projects/test-project/locations/us-central1/")
        assert job["state"] == "JOB_STATE_FAILED" and "startTime" not in job
        assert "Resources are insufficient in region: us-central1" in job["error"]["message"]
    assert spot["jobSpec"]["scheduling"]["strategy"] == "SPOT"
    assert spot["createTime"] >= reserved["endTime"] and l4["createTime"] >= spot["endTime"]
    assert l4["name"].startswith("projects/test-project/locations/us-east1/")
    assert l4["state"] == "JOB_STATE_SUCCEEDED"
    pools = l4["jobSpec"]["workerPoolSpecs"]
    assert [p["machineSpec"]["acceleratorType"] for p in pools] == ["NVIDIA_L4", "NVIDIA_L4"]
    assert [int(p["replicaCount"]) for p in pools] == [1, 1]

    out = dag_xcom(dr, "train")
    assert out["name"] == l4["name"] and out["state"] == "JOB_STATE_SUCCEEDED"
    rung = out["rung"]
    assert (rung["number"], rung["of"], rung["name"]) == (3, 3, "l4-east")
    assert [(s["rung"], s["name"], s["job"], s["outcome"]) for s in rung["left"]] == [
        (1, "a100-reserved", reserved["name"], "stockout"),
        (2, "a100-spot", spot["name"], "stockout"),
    ]

    text = logged(capfd)
    assert "Capacity ladder of 3 rungs" in text
    assert "Leaving rung 1 (a100-reserved) after" in text
    assert "Leaving rung 2 (a100-spot) after" in text
    assert f"Rung 3/3 (l4-east) runs {l4['name']}" in text

    week = "20261115-20261122"
    model_dir = (
        stocked_out.config.gcs_root / "vertex-dist-examples" / "capacity-ladder" / "models" / week / "model"
    )
    assert json.loads((model_dir / "model.json").read_text())["cluster"]["trainers"] == 2
