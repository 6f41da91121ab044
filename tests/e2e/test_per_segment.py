"""``dags/per_segment.py`` end to end: a mapped prep, a mapped training (one job per segment), the
best model picked downstream."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from operators.harness import run_dag

from airflow_vertex_dist.hooks.labels import run_labels
from vertex_emulator.app import Emulator

pytestmark = pytest.mark.slow

PARENT = "projects/test-project/locations/us-central1"


def _xcoms(dr: Any, task_id: str) -> dict[int, Any]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(
            select(XComModel.map_index, XComModel.value).where(
                XComModel.run_id == dr.run_id, XComModel.task_id == task_id, XComModel.key == "return_value"
            )
        ).all()
    return {index: json.loads(value) if isinstance(value, str) else value for index, value in rows}


def _states(dr: Any) -> dict[tuple[str, int], str]:
    from airflow.utils.session import create_session

    with create_session() as session:
        return {(ti.task_id, ti.map_index): str(ti.state) for ti in dr.get_task_instances(session=session)}


def test_one_job_per_segment_and_the_best_model_picked(examples: Emulator, load_dags: Any) -> None:
    dag = load_dags("per_segment.py")["vertex_dist_per_segment"]
    when = datetime(2026, 11, 20, tzinfo=timezone.utc)
    dr = run_dag(dag, logical_date=when)
    states = _states(dr)
    assert set(states.values()) == {"success"}, states
    segments = ["north", "south", "west"]
    assert sorted(k for k in states if k[0] == "train") == [("train", i) for i in range(3)]

    jobs = {j["name"]: j for j in examples.store.list("customJobs", PARENT)}
    assert len(jobs) == 3
    outputs = _xcoms(dr, "train")
    gcs = examples.config.gcs_root / "vertex-dist-examples" / "per_segment"
    accuracies = {}
    for index, segment in enumerate(segments):
        job = jobs[outputs[index]["name"]]
        assert job["state"] == "JOB_STATE_SUCCEEDED"
        assert job["displayName"] == f"segment-{segment}-20261120"
        labels = run_labels("vertex_dist_per_segment", "train", dr.run_id, index)
        assert {k: job["labels"][k] for k in labels} == labels
        assert job["labels"]["segment"] == segment
        base = job["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"]
        assert base == f"gs://vertex-dist-examples/per_segment/models/{segment}/20261120"
        metrics = json.loads((gcs / "models" / segment / "20261120" / "model" / "metrics.json").read_text())
        accuracies[segment] = metrics["accuracy"]

    best = _xcoms(dr, "pick_best")[-1]
    assert best["scores"] == accuracies
    top = max(accuracies, key=lambda s: accuracies[s])
    assert best["segment"] == top
    assert best["job"] == outputs[segments.index(top)]["name"]
    assert best["model_uri"] == f"gs://vertex-dist-examples/per_segment/models/{top}/20261120/model"
    assert len(set(accuracies.values())) == 3  # the segments' data really differ
