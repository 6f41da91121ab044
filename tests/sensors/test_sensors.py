"""The job, replica and trial sensors run for real (dag.test(), emulator), poking and deferred."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG
from operators.harness import PY, dag_xcom, logged, run_dag, ti_state
from operators.test_tuning import tuning_spec

from airflow_vertex_dist.operators.cancel import VertexCancelJobOperator
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.operators.tuning import VertexTuningOperator
from airflow_vertex_dist.sensors.jobs import VertexJobSensor, VertexReplicaSensor, VertexTrialSensor
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Faults

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
PARENT = "projects/test-project/locations/us-central1"
JOB_NAME = "{{ ti.xcom_pull(task_ids='submit')['name'] }}"
FAST = {"poke_interval": 0.2, "timeout": 60}


def spec(code: str, *, workers: int = 0, web: bool = False) -> DistributedTrainingJob:
    pool = WorkerPool(
        machine=Machine(machine_type="n1-standard-4"),
        container=Container(image_uri="python:3.11", command=(PY, "-c", code)),
    )
    return DistributedTrainingJob(
        display_name="sensed",
        primary=pool,
        workers=WorkerPool.like(pool, replica_count=workers) if workers else None,
        enable_web_access=web,
    )


def wait_for(flag: Path) -> str:
    return f"import pathlib, time\nwhile not pathlib.Path({str(flag)!r}).exists(): time.sleep(0.05)"


def submitted(em: Emulator) -> dict[str, Any]:
    [job] = [j for j in em.store.list("customJobs", PARENT) if j.get("labels", {}).get("airflow-task")]
    return job


# -------------------------------------------------------------------------------------------- jobs


@pytest.mark.parametrize("deferrable", [False, True])
def test_job_sensor_waits_for_the_target_state(vertex_conn: Emulator, deferrable: bool) -> None:
    with DAG(f"sense_job_{deferrable}", schedule=None, start_date=START) as dag:
        submit = VertexTrainingOperator(
            task_id="submit", spec=spec("import time; time.sleep(1)"), wait_for_completion=False
        )
        sense = VertexJobSensor(task_id="sense", job_name=JOB_NAME, deferrable=deferrable, **FAST)
        submit >> sense
    dr = run_dag(dag)
    assert ti_state(dr, "sense") == "success"
    job = submitted(vertex_conn)
    out = dag_xcom(dr, "sense")
    assert out["name"] == job["name"] and out["state"] == "JOB_STATE_SUCCEEDED"
    assert dag_xcom(dr, "sense", "_link_VertexJobLink") == f"{vertex_conn.rest_endpoint}/ui/{job['name']}"


@pytest.mark.parametrize("deferrable", [False, True])
def test_job_sensor_fails_fast_on_a_failure_state(
    vertex_conn: Emulator, deferrable: bool, capfd: Any
) -> None:
    with DAG(f"sense_job_fail_{deferrable}", schedule=None, start_date=START) as dag:
        submit = VertexTrainingOperator(
            task_id="submit", spec=spec("import sys; sys.exit(5)"), wait_for_completion=False
        )
        sense = VertexJobSensor(task_id="sense", job_name=JOB_NAME, deferrable=deferrable, retries=3, **FAST)
        submit >> sense
    dr = run_dag(dag)
    assert ti_state(dr, "sense") == "failed"  # not up_for_retry: a failed job stays failed
    job = submitted(vertex_conn)
    assert job["state"] == "JOB_STATE_FAILED"
    assert (
        f"AirflowFailException: job {job['name']} ended FAILED: The replica workerpool0-0 exited"
        in logged(capfd)
    )


def test_job_sensor_arguments_are_checked_at_parse_time() -> None:
    with pytest.raises(ValueError, match=r"target_states: 'DONE' is not a job state"):
        VertexJobSensor(task_id="s", job_name=f"{PARENT}/customJobs/1", target_states=["DONE"])
    with pytest.raises(ValueError, match="job_name: 'jobs/1' is not a job name"):
        VertexJobSensor(task_id="s", job_name="jobs/1")
    with pytest.raises(ValueError, match="failure_states: JOB_STATE_RUNNING is also a target state"):
        VertexJobSensor(
            task_id="s",
            job_name=f"{PARENT}/customJobs/1",
            target_states=["RUNNING"],
            failure_states=["RUNNING"],
        )


# ---------------------------------------------------------------------------------------- replicas


@pytest.mark.parametrize("deferrable", [False, True])
def test_replica_sensor_sees_a_whole_pool_up(vertex_conn: Emulator, tmp_path: Path, deferrable: bool) -> None:
    flag = tmp_path / "done"
    with DAG(f"sense_replicas_{deferrable}", schedule=None, start_date=START) as dag:
        submit = VertexTrainingOperator(
            task_id="submit", spec=spec(wait_for(flag), workers=2, web=True), wait_for_completion=False
        )
        sense = VertexReplicaSensor(
            task_id="sense",
            job_name=JOB_NAME,
            replicas=["workerpool0-0", "workerpool1-*"],
            deferrable=deferrable,
            on_success_callback=lambda context: flag.write_text("done"),
            **FAST,
        )
        submit >> sense
    dr = run_dag(dag)
    assert ti_state(dr, "sense") == "success"
    job = submitted(vertex_conn)
    assert sorted(job["webAccessUris"]) == ["workerpool0-0", "workerpool1-0", "workerpool1-1"]
    assert dag_xcom(dr, "sense")["state"] == "JOB_STATE_RUNNING"


def test_replica_sensor_needs_web_access(vertex_conn: Emulator, capfd: Any) -> None:
    with DAG("sense_replicas_noweb", schedule=None, start_date=START) as dag:
        submit = VertexTrainingOperator(
            task_id="submit", spec=spec("import time; time.sleep(30)"), wait_for_completion=False
        )
        sense = VertexReplicaSensor(task_id="sense", job_name=JOB_NAME, replicas=["workerpool0-0"], **FAST)
        submit >> sense
    dr = run_dag(dag)
    assert ti_state(dr, "sense") == "failed"
    assert "was created without enableWebAccess: replicas are visible only through" in logged(capfd)


@pytest.mark.parametrize("deferrable", [False, True])
def test_replica_sensor_fails_when_the_job_ends_first(
    tmp_path: Path, monkeypatch: Any, deferrable: bool, capfd: Any
) -> None:
    """The job is cancelled while still QUEUED (slow scheduling): its replicas never come up."""
    from operators.harness import CONN_ENV, connection_env

    with testing.running_emulator(tmp_path, faults=Faults(queued_s=60)) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        with DAG(f"sense_replicas_ended_{deferrable}", schedule=None, start_date=START) as dag:
            submit = VertexTrainingOperator(
                task_id="submit", spec=spec("pass", web=True), wait_for_completion=False
            )
            cancel = VertexCancelJobOperator(task_id="cancel", job_name=JOB_NAME, poll_interval=0.2)
            sense = VertexReplicaSensor(
                task_id="sense", job_name=JOB_NAME, replicas=["workerpool0-0"], deferrable=deferrable, **FAST
            )
            submit >> cancel >> sense
        dr = run_dag(dag)
        assert ti_state(dr, "cancel") == "success"
        assert dag_xcom(dr, "cancel")["state"] == "JOB_STATE_CANCELLED"
        assert ti_state(dr, "sense") == "failed"
        assert "ended CANCELLED before replicas workerpool0-0 were up" in logged(capfd)


# ------------------------------------------------------------------------------------------ trials


@pytest.mark.parametrize(
    ("deferrable", "condition"),
    [(False, {"min_succeeded": 2}), (True, {"metric_threshold": 0.5})],
)
def test_trial_sensor_success(vertex_conn: Emulator, deferrable: bool, condition: dict[str, Any]) -> None:
    with DAG(f"sense_trials_{deferrable}", schedule=None, start_date=START) as dag:
        submit = VertexTuningOperator(
            task_id="submit", spec=tuning_spec("MINIMIZE"), wait_for_completion=False
        )
        sense = VertexTrialSensor(
            task_id="sense", job_name=JOB_NAME, deferrable=deferrable, **condition, **FAST
        )
        submit >> sense
    dr = run_dag(dag)
    assert ti_state(dr, "sense") == "success"
    out = dag_xcom(dr, "sense")
    if "min_succeeded" in condition:
        assert out["trial_counts"]["succeeded"] >= 2
    else:
        assert out["best_trial"]["parameters"] == {"x": 3} and out["best_trial"]["metric_value"] <= 0.5
    assert all(type(row["parameters"]["x"]) is int for row in out["trials"])  # not 3.0


@pytest.mark.parametrize("deferrable", [False, True])
def test_trial_sensor_fails_when_the_job_ends_first(
    vertex_conn: Emulator, deferrable: bool, capfd: Any
) -> None:
    """Minimizing, the best loss is 0.5: a 0.1 threshold is never crossed, and the study ends."""
    with DAG(f"sense_trials_fail_{deferrable}", schedule=None, start_date=START) as dag:
        submit = VertexTuningOperator(
            task_id="submit", spec=tuning_spec("MINIMIZE"), wait_for_completion=False
        )
        sense = VertexTrialSensor(
            task_id="sense", job_name=JOB_NAME, metric_threshold=0.1, deferrable=deferrable, **FAST
        )
        submit >> sense
    dr = run_dag(dag)
    assert ti_state(dr, "sense") == "failed"
    [study] = vertex_conn.store.list("hyperparameterTuningJobs", PARENT)
    assert study["state"] == "JOB_STATE_SUCCEEDED"
    assert f"job {study['name']} ended SUCCEEDED with 3 succeeded trials; best loss=0.5" in logged(capfd)


def test_replica_sensor_arguments_are_checked_at_parse_time() -> None:
    with pytest.raises(ValueError, match=r"replicas\[0\]: 'chief' is not a replica name"):
        VertexReplicaSensor(task_id="s", job_name=f"{PARENT}/customJobs/1", replicas=["chief"])
    with pytest.raises(ValueError, match="is a tuning job; its replicas belong to its trials"):
        VertexReplicaSensor(
            task_id="s", job_name=f"{PARENT}/hyperparameterTuningJobs/1", replicas=["workerpool0-0"]
        )


def test_trial_sensor_arguments_are_checked_at_parse_time() -> None:
    with pytest.raises(ValueError, match="min_succeeded, metric_threshold: set at least one"):
        VertexTrialSensor(task_id="s", job_name=f"{PARENT}/hyperparameterTuningJobs/1")
    with pytest.raises(ValueError, match="is not a hyperparameterTuningJobs name"):
        VertexTrialSensor(task_id="s", job_name=f"{PARENT}/customJobs/1", min_succeeded=1)
