"""Replica lines in the task log and a failed job's cause, through dag.test() on the emulator."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.logs.worker_stream import check_stream_logs, failing_replica
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool
from vertex_emulator.app import Emulator

from .harness import PY, logged, run_dag, ti_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)

# Every replica prints two steps and leaves a mark; workerpool1-1 waits for every replica's mark (so all
# have printed), prints a distinctive line and a traceback, and exits 1 (failing the job); the others
# wait to be stopped.
TRAINER = """
import json, os, pathlib, sys, time
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
me = f"{task['type']}-{task['index']}"
shared = pathlib.Path(SHARED)
for step in range(2):
    print(f"{me} step {step}", flush=True)
(shared / me).touch()
deadline = time.monotonic() + 60
if me == "workerpool1-1":
    marks = [shared / key for key in ("workerpool0-0", "workerpool1-0", "workerpool1-1")]
    while not all(mark.exists() for mark in marks) and time.monotonic() < deadline:
        time.sleep(0.05)
    print("shard 7 is corrupt: giving up", flush=True)
    raise RuntimeError("corrupt shard 7")
while time.monotonic() < deadline:
    time.sleep(0.05)
"""


def _spec(tmp_path: Path) -> DistributedTrainingJob:
    """The job, its replicas leaving their marks in a directory of their own under ``tmp_path``."""
    marks = tmp_path / "marks"
    marks.mkdir()
    code = f"SHARED = {str(marks)!r}" + TRAINER

    def pool(count: int) -> WorkerPool:
        return WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            replica_count=count,
            container=Container(image_uri="python:3.11", command=(PY, "-c", code)),
        )

    return DistributedTrainingJob(display_name="logs", primary=pool(1), workers=pool(2))


def test_non_deferred_streams_lines_and_explains_the_failure(
    vertex_conn: Emulator, capfd: Any, tmp_path: Path
) -> None:
    with DAG("logs_sync", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=_spec(tmp_path), deferrable=False, poll_interval=0.5)
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"
    out = logged(capfd)
    # default selection: the primary's lines, the workers' errors only
    assert "[workerpool0-0] workerpool0-0 step 0" in out
    assert "[workerpool0-0] workerpool0-0 step 1" in out
    assert "[workerpool1-0] workerpool1-0 step 0" not in out
    assert "[workerpool1-1] RuntimeError: corrupt shard 7" in out
    assert out.index("[workerpool0-0] workerpool0-0 step 0") < out.index(
        "[workerpool0-0] workerpool0-0 step 1"
    )
    assert "Last lines of workerpool1-1 (Cloud Logging):" in out
    diagnosis = out[out.index("Last lines of workerpool1-1 (Cloud Logging):") :]
    assert "shard 7 is corrupt: giving up" in diagnosis


def test_stream_all_and_off(vertex_conn: Emulator, capfd: Any, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with DAG("logs_all", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="all", spec=_spec(tmp_path / "a"), deferrable=False, poll_interval=0.5, stream_logs="all"
        )
        VertexTrainingOperator(
            task_id="off", spec=_spec(tmp_path / "b"), deferrable=False, poll_interval=0.5, stream_logs=False
        )
    run_dag(dag)
    out = logged(capfd)
    assert out.count("[workerpool1-0] workerpool1-0 step 0") == 1  # only the "all" task streams it
    assert out.count("[workerpool0-0] workerpool0-0 step 0") == 1
    # the diagnosis either way: quoted where the lines were not streamed, pointed at where they were
    assert out.count("Last lines of workerpool1-1 (Cloud Logging):") == 1
    assert out.count("The last lines of workerpool1-1 are the replica lines above in this log.") == 1


def test_deferred_failure_explains_the_failure(vertex_conn: Emulator, capfd: Any, tmp_path: Path) -> None:
    with DAG("logs_deferred", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=_spec(tmp_path), deferrable=True, poll_interval=0.3)
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"
    out = logged(capfd)
    diagnosis = out[out.index("Last lines of workerpool1-1 (Cloud Logging):") :]
    assert "shard 7 is corrupt: giving up" in diagnosis
    # streamed from the trigger while it waited
    assert "[workerpool0-0] workerpool0-0 step 0" in out
    assert "[workerpool0-0] workerpool0-0 step 1" in out
    assert "[workerpool1-1] RuntimeError: corrupt shard 7" in out
    assert "[workerpool1-0] workerpool1-0 step 0" not in out
    assert out.count("[workerpool0-0] workerpool0-0 step 0") == 1


@pytest.mark.parametrize("value", ["some", [], ["worker-1"], ["workerpool1-x*"], 3, None])
def test_bad_stream_logs_names_the_field(value: Any) -> None:
    with pytest.raises(ValueError, match=r"stream_logs(\[0\])?: (must be True|.* is not a replica name)"):
        check_stream_logs(value)


def test_failing_replica_from_the_error_message() -> None:
    job = {"error": {"message": "The replica workerpool1-3 exited with a non-zero status of 1."}}
    assert failing_replica(job) == "workerpool1-3"
    assert failing_replica({"error": {"message": "quota"}}) is None


def test_failure_details_are_bounded_and_masked() -> None:
    from airflow.sdk.execution_time.secrets_masker import mask_secret

    from airflow_vertex_dist.hooks.logs import LogLine
    from airflow_vertex_dist.logs.worker_stream import FAILURE_LINES, MAX_LINE_CHARS, failure_details

    mask_secret("s3cr3t-token-value")
    lines = [
        LogLine("7", "workerpool1-0", None, "ERROR", "2026-01-01T00:00:00Z", str(i), f"line {i}")
        for i in range(50)
    ]
    lines.append(
        LogLine(
            "7",
            "workerpool1-0",
            None,
            "ERROR",
            "2026-01-01T00:00:01Z",
            "x",
            "key=s3cr3t-token-value " + "y" * 5000,
        )
    )
    asked: list[tuple[str, str, int]] = []

    def read_tail(job_id: str, replica: str, n: int) -> list[LogLine]:
        asked.append((job_id, replica, n))
        return lines[-n:]

    job = {
        "name": "projects/p/locations/l/customJobs/7",
        "error": {"message": "The replica workerpool1-0 exited with a non-zero status of 1."},
    }
    text = failure_details(job, read_tail)
    assert asked == [("7", "workerpool1-0", FAILURE_LINES)]
    assert "s3cr3t-token-value" not in text and "key=***" in text
    body = text.split("(Cloud Logging):\n", 1)[1].splitlines()
    assert len(body) == FAILURE_LINES
    assert max(len(line) for line in body) <= MAX_LINE_CHARS


@pytest.mark.parametrize("deferrable", [True, False])
def test_a_job_sensor_streams_the_watched_jobs_lines(
    vertex_conn: Emulator, capfd: Any, deferrable: bool
) -> None:
    from airflow_vertex_dist.sensors.jobs import VertexJobSensor

    code = "for i in range(3): print(f'sensor sees line {i}', flush=True)"
    spec = DistributedTrainingJob(
        display_name="watched",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(image_uri="python:3.11", command=(PY, "-c", code)),
        ),
    )
    with DAG(f"logs_sensor_{deferrable}", schedule=None, start_date=START) as dag:
        train = VertexTrainingOperator(
            task_id="train", spec=spec, wait_for_completion=False, stream_logs=False
        )
        done = VertexJobSensor(
            task_id="done",
            job_name="{{ ti.xcom_pull(task_ids='train')['name'] }}",
            deferrable=deferrable,
            poke_interval=0.3,
            stream_logs="all",
        )
        train >> done
    dr = run_dag(dag)
    assert ti_state(dr, "done") == "success"
    out = logged(capfd)
    for i in range(3):
        assert out.count(f"[workerpool0-0] sensor sees line {i}") == 1
