"""A spec error fails the task with that error alone: no second, misleading one after it (the job
link asking for an XCom the failed try never pushed)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs.examples import PARAMETER_SERVER_EXAMPLE
from vertex_emulator.app import Emulator

from .harness import dag_xcom, logged, run_dag, ti_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def test_a_rendered_spec_error_is_the_only_error(vertex_conn: Emulator, capfd: Any) -> None:
    spec = PARAMETER_SERVER_EXAMPLE.model_dump(mode="json", exclude_unset=True)
    spec["base_output_directory"] = "{{ params.out }}"
    with DAG("spec_error_only", schedule=None, start_date=START, params={"out": "not-a-bucket"}) as dag:
        VertexTrainingOperator(task_id="train", spec=spec, deferrable=False)
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"
    log = logged(capfd)
    assert "invalid DistributedTrainingJob spec after rendering:" in log
    assert "spec.base_output_directory: must be a Cloud Storage URI" in log
    assert "XCom not found" not in log
    assert dag_xcom(dr, "train", "_link_VertexJobLink") == ""  # no job, no link
    assert vertex_conn.store.list("customJobs", "projects/test-project/locations/us-central1") == []
