"""A job the service restarts is still one job to the operator: a replica that dies of SIGSEGV is
restarted by the service (the emulator follows "Understand the training service": the worker in place,
then the whole job), the job stays RUNNING, and the task neither creates a second job nor fails
while it restarts."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Scheduling
from vertex_emulator.app import Emulator

from .harness import run_dag, ti_state
from .test_training import jobs, spec

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _crashes_then_succeeds(count: Path, crashes: int) -> str:
    """Replica code that dies of SIGSEGV on its first ``crashes`` starts, then succeeds."""
    return (
        f"import os, pathlib, signal, time; p = pathlib.Path({str(count)!r}); "
        "n = int(p.read_text()) if p.exists() else 0; p.write_text(str(n + 1)); time.sleep(0.3); "
        f"os.kill(os.getpid(), signal.SIGSEGV) if n < {crashes} else print('trained', flush=True)"
    )


@pytest.mark.parametrize(("deferrable", "whole_job"), [(False, False), (True, True)])
def test_a_job_the_service_restarts_is_one_job_and_the_task_succeeds(
    vertex_conn: Emulator, tmp_path: Path, deferrable: bool, whole_job: bool
) -> None:
    count = tmp_path / "starts"
    extra = {"scheduling": Scheduling(restart_job_on_worker_restart=True)} if whole_job else {}
    with DAG(f"service_restart_{deferrable}", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=spec(_crashes_then_succeeds(count, 2), **extra),
            deferrable=deferrable,
            poll_interval=0.2,
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    [job] = jobs(vertex_conn)  # no second job was created while the service restarted the first
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    assert count.read_text() == "3"  # two crashes, two restarts, one success
