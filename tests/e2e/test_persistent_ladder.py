"""``dags/persistent_ladder.py`` end to end on the emulator: the persistent resource made once, reused,
and a week when it cannot come up.

Two weeks in a row with A100s to spare: the first run creates the resource and trains on it, the second
finds it (one resource, the same create time) and trains on it too; the sweep DAG leaves it (used within
its idle timeout). Then, with 2 A100s free in the region and the resource needing 4, its creation
stocks out and the week trains on rung 2 (on demand), never more than one live job of the task.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from operators.harness import CONN_ENV, connection_env, dag_xcom, logged, run_dag, ti_state

from vertex_emulator import Capacity, testing
from vertex_emulator.app import Emulator

from .conftest import DAGS, _fresh_common
from .test_capacity_ladder import most_live_jobs

pytestmark = pytest.mark.slow

PARENT = "projects/test-project/locations/us-central1"
RESOURCE = f"{PARENT}/persistentResources/a100-weekly"


@pytest.fixture
def examples_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, airflow_db: None) -> Iterator[Any]:
    """Start the ``examples`` emulator with a given ``Capacity`` (a function of it; one per test)."""
    monkeypatch.syspath_prepend(str(DAGS))
    monkeypatch.setenv("VERTEX_DIST_EXAMPLES_POLL_INTERVAL", "0.5")
    monkeypatch.setenv("GCS_MOUNT_ROOT", str(tmp_path / "gcs"))
    common = _fresh_common()
    stack: list[Any] = []

    def start(capacity: Capacity) -> Emulator:
        cm = testing.running_emulator(tmp_path, image_map=common.emulator_image_map(), capacity=capacity)
        em = cm.__enter__()
        stack.append(cm)
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        return em

    yield start
    for cm in stack:
        cm.__exit__(None, None, None)
    sys.modules.pop("examples_common", None)


def jobs(em: Emulator) -> list[dict[str, Any]]:
    return sorted(em.store.list("customJobs", PARENT), key=lambda j: j["createTime"])


def resources(em: Emulator) -> list[dict[str, Any]]:
    return list(em.store.list_resources())


def model_of(em: Emulator, week: str) -> dict[str, Any]:
    path = em.config.gcs_root / "vertex-dist-examples" / "persistent-ladder" / "models" / week / "model"
    return dict(json.loads((path / "model.json").read_text()))


def test_the_resource_is_made_once_and_reused_week_after_week(
    examples_with: Any, load_dags: Any, capfd: Any
) -> None:
    em = examples_with(Capacity())
    dags = load_dags("persistent_ladder.py")
    dag, sweep = dags["vertex_dist_persistent_ladder"], dags["vertex_dist_sweep_persistent_resources"]
    first = run_dag(dag, logical_date=datetime(2026, 11, 15, tzinfo=timezone.utc))
    assert ti_state(first, "train") == "success", first
    (made,) = resources(em)
    second = run_dag(dag, logical_date=datetime(2026, 11, 22, tzinfo=timezone.utc))
    assert ti_state(second, "train") == "success", second

    (resource,) = resources(em)  # one resource: the second run found it
    assert resource["name"] == RESOURCE and resource["createTime"] == made["createTime"]
    assert resource["state"] == "RUNNING"
    assert resource["labels"]["managed-by"] == "airflow-vertex-dist"
    assert resource["labels"]["airflow-idle-timeout"] == "691200s"  # 8 days
    one, two = jobs(em)
    for job in (one, two):
        assert job["jobSpec"]["persistentResourceId"] == "a100-weekly"
        assert job["labels"]["airflow-rung"] == "r1" and job["state"] == "JOB_STATE_SUCCEEDED"
    assert one["labels"]["airflow-run"] != two["labels"]["airflow-run"]
    for dr in (first, second):
        out = dag_xcom(dr, "train")
        rung = out["rung"]
        assert (rung["number"], rung["name"], rung["left"]) == (1, "reserved", [])
        # the ledger prices a job on the resource as any job (capacity.md: the bill is the resource's)
        (entry,) = out["ledger"]["jobs"]
        assert (entry["rung"], entry["usd_basis"]) == ("reserved", "on-demand") and entry["usd"] > 0
    assert model_of(em, "20261108-20261115")["cluster"]["trainers"] == 2
    assert model_of(em, "20261115-20261122")["cluster"]["trainers"] == 2

    text = logged(capfd)
    assert text.count("Rung 1 (reserved): creating persistent resource") == 1, text[-3000:]

    swept = run_dag(sweep, logical_date=datetime(2026, 11, 22, 1, tzinfo=timezone.utc))
    assert ti_state(swept, "sweep") == "success"
    assert dag_xcom(swept, "sweep") == []  # used minutes ago: kept for the next week
    assert [r["name"] for r in resources(em)] == [RESOURCE]


def test_a_week_when_the_resource_cannot_come_up_trains_on_demand(
    examples_with: Any, load_dags: Any, capfd: Any
) -> None:
    # 2 A100s free: enough for the job on demand, not for the resource's 4
    two_free = {"us-central1": {"NVIDIA_TESLA_A100": 2}}
    em = examples_with(Capacity(stock=two_free, stockout_after_s=1.0))
    dag = load_dags("persistent_ladder.py")["vertex_dist_persistent_ladder"]
    with most_live_jobs(em) as most:
        dr = run_dag(dag, logical_date=datetime(2026, 11, 22, tzinfo=timezone.utc))
    assert ti_state(dr, "train") == "success", dr
    assert most[0] == 1

    (resource,) = resources(em)
    assert resource["state"] == "ERROR"
    assert "Resources are insufficient in region: us-central1" in resource["error"]["message"]
    (job,) = jobs(em)  # no job on rung 1: its resource never ran
    assert job["labels"]["airflow-rung"] == "r2" and job["state"] == "JOB_STATE_SUCCEEDED"
    assert "persistentResourceId" not in job["jobSpec"]
    rung = dag_xcom(dr, "train")["rung"]
    assert (rung["number"], rung["name"]) == (2, "on-demand")
    assert [(s["rung"], s["name"], s["job"], s["outcome"]) for s in rung["left"]] == [
        (1, "reserved", None, "stockout")
    ]
    assert "is ERROR after" in rung["left"][0]["reason"]
    assert "Resources are insufficient in region: us-central1" in rung["left"][0]["reason"]
    text = logged(capfd)
    assert "Leaving rung 1 (reserved) after" in text and "s: stockout: persistent resource" in text
    assert model_of(em, "20261115-20261122")["cluster"]["trainers"] == 2
