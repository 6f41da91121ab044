"""``dags/retraining.py`` end to end: the week's snapshot, a 3-replica job, the model of that week."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from operators.harness import dag_xcom, run_dag, ti_state

from vertex_emulator.app import Emulator

pytestmark = pytest.mark.slow

PARENT = "projects/test-project/locations/us-central1"


def test_a_weekly_run_trains_on_its_interval(examples: Emulator, load_dags: Any) -> None:
    dag = load_dags("retraining.py")["vertex_dist_retraining"]
    # catch-up safe: no pile of runs after a pause, one run at a time, weekly data intervals
    assert dag.catchup is False and dag.max_active_runs == 1
    assert type(dag.timetable).__name__ == "CronDataIntervalTimetable"
    when = datetime(2026, 11, 22, tzinfo=timezone.utc)  # a Sunday: the week 15-22 Nov
    dr = run_dag(dag, logical_date=when)
    start = dr.data_interval_start.strftime("%Y%m%d")
    end = dr.data_interval_end.strftime("%Y%m%d")
    assert (start, end) == ("20261115", "20261122")
    assert ti_state(dr, "snapshot_week") == "success"
    assert ti_state(dr, "train") == "success", dr

    week = f"{start}-{end}"
    gcs = examples.config.gcs_root / "vertex-dist-examples" / "retraining"
    snapshot = dag_xcom(dr, "snapshot_week")
    assert snapshot["uri"] == f"gs://vertex-dist-examples/retraining/data/{week}"
    assert snapshot["train_rows"] + snapshot["eval_rows"] == 1200
    assert (gcs / "data" / week / "train.csv").is_file()

    [job] = examples.store.list("customJobs", PARENT)
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    assert job["displayName"] == f"retrain-{end}"
    pools = job["jobSpec"]["workerPoolSpecs"]
    assert [int(p["replicaCount"]) for p in pools] == [1, 2]
    assert f"--data-dir=gs://vertex-dist-examples/retraining/data/{week}" in pools[0]["containerSpec"]["args"]
    base = job["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"]
    assert base == f"gs://vertex-dist-examples/retraining/models/{week}"

    model_dir = gcs / "models" / week / "model"
    model = json.loads((model_dir / "model.json").read_text())
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert model["cluster"] == {"trainers": 3, "parameter_servers": 0}
    assert metrics["train_rows"] == snapshot["train_rows"]
    assert metrics["accuracy"] > 0.7  # a separable synthetic task: training really happened
    out = dag_xcom(dr, "train")
    assert out["name"] == job["name"] and out["state"] == "JOB_STATE_SUCCEEDED"
