"""VertexTuningOperator run for real: trials are processes reporting with cloudml-hypertune."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.tuning import VertexTuningOperator
from airflow_vertex_dist.specs import (
    Container,
    DistributedTrainingJob,
    HyperparameterTuningJob,
    IntegerParameter,
    Machine,
    Metric,
    Study,
    WorkerPool,
)
from vertex_emulator.app import Emulator

from .harness import PY, dag_xcom, logged, run_dag, ti_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
PARENT = "projects/test-project/locations/us-central1"

#: loss = (x - 3)^2 + 0.5, minimized; x == 2 reports nothing, so its trial ends INFEASIBLE.
TRAINER = (
    "import argparse, hypertune\n"
    "p = argparse.ArgumentParser(); p.add_argument('--x', type=int); a = p.parse_args()\n"
    "if a.x != 2:\n"
    "    hypertune.HyperTune().report_hyperparameter_tuning_metric("
    "hyperparameter_metric_tag='loss', metric_value=(a.x - 3) ** 2 + 0.5, global_step=1)\n"
)


def tuning_spec(
    goal: str = "MINIMIZE",
    *,
    trials: int = 4,
    trainer: str = TRAINER,
    parallel: int = 2,
    max_failed: int | None = None,
) -> HyperparameterTuningJob:
    return HyperparameterTuningJob(
        display_name="tune",
        trial_job=DistributedTrainingJob(
            display_name="tune-trial",
            primary=WorkerPool(
                machine=Machine(machine_type="n1-standard-4"),
                container=Container(image_uri="python:3.11", command=(PY, "-c", trainer)),
            ),
        ),
        study=Study(
            metrics=(Metric(metric_id="loss", goal=goal),),  # type: ignore[arg-type]
            parameters=(IntegerParameter(parameter_id="x", min_value=1, max_value=4),),
            algorithm="GRID_SEARCH",
        ),
        max_trial_count=trials,
        parallel_trial_count=parallel,
        max_failed_trial_count=trials if max_failed is None else max_failed,
    )


def tuning_jobs(em: Emulator) -> list[dict[str, Any]]:
    return em.store.list("hyperparameterTuningJobs", PARENT)


def check_outputs(em: Emulator, out: dict[str, Any], goal: str) -> None:
    [job] = tuning_jobs(em)
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    assert out["name"] == job["name"] and out["kind"] == "hyperparameterTuningJobs"
    assert out["console_url"] == f"{em.rest_endpoint}/ui/{job['name']}"
    assert out["trial_counts"] == {"total": 4, "done": 4, "succeeded": 3, "infeasible": 1, "active": 0}
    by_x = {row["parameters"]["x"]: row for row in out["trials"]}
    assert sorted(by_x) == [1, 2, 3, 4]
    # an INTEGER parameter's value is an int (the v1 Value's number is a double: 3.0 before)
    assert {type(x) for x in by_x} == {int}
    assert type(out["best_trial"]["parameters"]["x"]) is int
    assert by_x[2]["state"] == "INFEASIBLE" and by_x[2]["metric_value"] is None
    assert {x: by_x[x]["metric_value"] for x in (1, 3, 4)} == {1: 4.5, 3: 0.5, 4: 1.5}
    best_x = 3 if goal == "MINIMIZE" else 1
    assert out["best_trial"] == {
        "id": by_x[best_x]["id"],
        "parameters": {"x": best_x},
        "metric_id": "loss",
        "metric_value": by_x[best_x]["metric_value"],
        "goal": goal,
    }
    # the cost ledger: the study's one job, its hours each trial's (deferred too: priced from the spec)
    [entry] = out["ledger"]["jobs"]
    assert (entry["job"], entry["kind"], entry["strategy"]) == (
        job["name"],
        "hyperparameterTuningJobs",
        "STANDARD",
    )
    assert entry["usd"] is not None and entry["usd"] == pytest.approx(out["cost"]["estimated_usd"], abs=1e-6)
    assert entry["replicas"] >= 1 and (entry["preempted_seconds"], entry["preemptions"]) == (0.0, 0)


@pytest.mark.parametrize(("deferrable", "goal"), [(False, "MINIMIZE"), (True, "MAXIMIZE")])
def test_tuning_runs_and_reports_the_best_trial(vertex_conn: Emulator, deferrable: bool, goal: str) -> None:
    with DAG(f"tune_{goal.lower()}", schedule=None, start_date=START) as dag:
        VertexTuningOperator(task_id="tune", spec=tuning_spec(goal), deferrable=deferrable, poll_interval=0.3)
    dr = run_dag(dag)
    assert ti_state(dr, "tune") == "success"
    out = dag_xcom(dr, "tune")
    check_outputs(vertex_conn, out, goal)
    assert dag_xcom(dr, "tune", "_link_VertexJobLink") == out["console_url"]


#: trial 1 (grid search: x=1) dies with a clear error; the others would report their loss
BROKEN_TRAINER = (
    "import argparse, hypertune\n"
    "p = argparse.ArgumentParser(); p.add_argument('--x', type=int); a = p.parse_args()\n"
    "if a.x == 1:\n"
    "    raise SystemExit('cannot read gs://data/train-00007: corrupt shard')\n"
    "hypertune.HyperTune().report_hyperparameter_tuning_metric("
    "hyperparameter_metric_tag='loss', metric_value=float(a.x), global_step=1)\n"
)


@pytest.mark.parametrize("deferrable", [False, True])
def test_a_failed_first_trial_fails_the_task_with_its_error(
    vertex_conn: Emulator, capfd: Any, deferrable: bool
) -> None:
    """``max_failed_trial_count`` unset: the service ends the job when its first trial fails (Google's
    tuning page, "Handle failed trials"); the task fails with the trial's error in its log."""
    spec = tuning_spec(trainer=BROKEN_TRAINER, parallel=1, max_failed=0)
    with DAG(f"tune_first_trial_{deferrable}", schedule=None, start_date=START) as dag:
        VertexTuningOperator(task_id="tune", spec=spec, deferrable=deferrable, poll_interval=0.3)
    dr = run_dag(dag)
    assert ti_state(dr, "tune") == "failed"
    [job] = tuning_jobs(vertex_conn)
    assert job["state"] == "JOB_STATE_FAILED"
    assert [t["id"] for t in job["trials"]] == ["1"]  # no trial after the first
    out = logged(capfd)
    assert "The first trial failed" in out
    assert "cannot read gs://data/train-00007: corrupt shard" in out
