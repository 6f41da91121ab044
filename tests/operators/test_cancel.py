"""VertexCancelJobOperator: cancels a running job (its replicas stop) and leaves an ended one alone."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.cancel import VertexCancelJobOperator
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from vertex_emulator.app import Emulator

from .harness import alive, dag_xcom, logged, poll, run_dag, ti_state
from .test_training import pid_code, pids, spec

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
JOB_NAME = "{{ ti.xcom_pull(task_ids='submit')['name'] }}"


def test_cancel_a_running_job(vertex_conn: Emulator, tmp_path: Path) -> None:
    pid_dir = tmp_path / "pids"
    with DAG("cancel_running", schedule=None, start_date=START) as dag:
        submit = VertexTrainingOperator(
            task_id="submit", spec=spec(pid_code(pid_dir), workers=1), wait_for_completion=False
        )
        cancel = VertexCancelJobOperator(
            task_id="cancel",
            job_name=JOB_NAME,
            poll_interval=0.2,
            pre_execute=lambda context: poll(lambda: len(pids(pid_dir)) == 2, what="replicas started"),
        )
        submit >> cancel
    dr = run_dag(dag)
    assert ti_state(dr, "cancel") == "success"
    out = dag_xcom(dr, "cancel")
    assert out["name"] == dag_xcom(dr, "submit")["name"]
    assert out["state"] == "JOB_STATE_CANCELLED" and out["error"]["code"] == 1
    assert dag_xcom(dr, "cancel", "_link_VertexJobLink") == out["console_url"]
    poll(lambda: not any(alive(pid) for pid in pids(pid_dir)), what="replica processes gone")


def test_cancel_leaves_an_ended_job_alone(vertex_conn: Emulator, capfd: Any) -> None:
    with DAG("cancel_ended", schedule=None, start_date=START) as dag:
        submit = VertexTrainingOperator(
            task_id="submit", spec=spec("pass"), poll_interval=0.2, deferrable=False
        )
        cancel = VertexCancelJobOperator(task_id="cancel", job_name=JOB_NAME)
        submit >> cancel
    dr = run_dag(dag)
    assert ti_state(dr, "cancel") == "success"
    out = dag_xcom(dr, "cancel")
    assert out["state"] == "JOB_STATE_SUCCEEDED"
    assert f"Job {out['name']} already ended JOB_STATE_SUCCEEDED: nothing to cancel" in logged(capfd)


def test_cancel_job_name_is_checked_at_parse_time() -> None:
    with pytest.raises(ValueError, match="job_name: 'x' is not a job name"):
        VertexCancelJobOperator(task_id="c", job_name="x")
