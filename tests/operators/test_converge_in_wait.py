"""A deferred first try makes its job with one call, and its trigger converges: run for real with
``dag.test()``, the emulator and real replica processes.

The run is a first try (``first_try``: no look-up before the Create). An older live job of the task --
same labels, same spec, as a concurrent try's would be -- is already there: the task's Create makes a
second one, the trigger's first List sees both and fires ``reattach``, and the task cancels its own job,
makes the older one its own (link and outputs) and waits on it until it succeeds.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.hooks.labels import MANAGED_BY_LABEL, merge_labels, run_labels, task_labels
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.operators import attach
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool
from vertex_emulator.app import Emulator

from .harness import PY, dag_xcom, logged, poll, run_dag, ti_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

PARENT = "projects/test-project/locations/us-central1"


def test_a_deferred_first_try_reattaches_to_an_older_job_its_trigger_finds(
    vertex_conn: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    go = tmp_path / "go"
    code = f"import pathlib, time\nwhile not pathlib.Path({str(go)!r}).exists(): time.sleep(0.05)"
    spec = DistributedTrainingJob(
        display_name="converge",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(image_uri="python:3.11", command=(PY, "-c", code)),
        ),
    )
    when = datetime.now(timezone.utc)
    with DAG("converge_in_wait", schedule=None, start_date=when) as dag:
        task = VertexTrainingOperator(task_id="train", spec=spec, deferrable=True, poll_interval=0.3)
    # dag.test() makes a manual run; this one is taken for a backfill's first try
    monkeypatch.setattr(attach, "FIRST_TRY_RUN_TYPES", frozenset({"manual"}))
    run_id = f"manual__{when.isoformat()}"
    body = task.job_body()
    labels = task_labels(run_labels(dag.dag_id, "train", run_id, -1), body, "m0")
    with VertexJobsHook() as hook:
        older = hook.create_job("customJobs", {**body, "labels": merge_labels(body.get("labels"), labels)})
    assert older["labels"][MANAGED_BY_LABEL]

    def release_when_reattached() -> None:  # the older job ends once the task's own one is cancelled
        poll(
            lambda: any(
                j["name"] != older["name"] and j["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
                for j in vertex_conn.store.list("customJobs", PARENT)
            ),
            timeout=120,
            what="the task's own job cancelled",
        )
        go.write_text("")

    releaser = threading.Thread(target=release_when_reattached, daemon=True)
    releaser.start()
    before = vertex_conn.call_counts()
    dr = run_dag(dag, logical_date=when)
    releaser.join(timeout=5)
    assert dr.run_id == run_id
    assert ti_state(dr, "train") == "success"
    jobs = vertex_conn.store.list("customJobs", PARENT)
    [own] = [j for j in jobs if j["name"] != older["name"]]
    assert own["state"] == "JOB_STATE_CANCELLED"
    assert vertex_conn.store.get(older["name"])["state"] == "JOB_STATE_SUCCEEDED"
    out = dag_xcom(dr, "train")
    assert out["name"] == older["name"] and out["state"] == "JOB_STATE_SUCCEEDED"
    assert dag_xcom(dr, "train", "_link_VertexJobLink") == out["console_url"]
    # the task's first step was its Create alone: no List before or after it
    after = vertex_conn.call_counts()
    assert after["CreateCustomJob"] - before.get("CreateCustomJob", 0) == 1
    text = logged(capfd)
    assert f"an older job of this task, {older['name']}, runs the same spec" in text
    assert f"Re-attaching to {older['name']}" in text
