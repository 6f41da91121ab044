"""The support matrix's "done when": a DAG written from the README alone passes on every cell.

A deferrable training task and a job sensor on its XCom, on the emulator through the connection the
README's "Run it locally" sets; then the training task runs again in the same run: ``dag.test()``
re-creates the run under the same run id, so the task's new try finds the job its run succeeded with
(same run labels, spec fingerprint and retry budget) and re-attaches to it, and the sensor waits on
it. (A task cleared by hand starts a job of its own instead: tests/operators/test_user_actions.py.)
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from operators.harness import (
    CONN_ENV,
    connection_env,
    dag_xcom,
    logged,
    migrate_db,
    run_dag,
    ti_state,
)

from vertex_emulator import testing

pytestmark = pytest.mark.slow

#: Written from the README: its imports, its spec classes, its operator and sensor, its connection id;
#: replicas run their container's ``command`` on this machine, as the README says the emulator does.
DAG_FILE = f"""
from datetime import datetime

from airflow.sdk import DAG

from airflow_vertex_dist.operators import VertexTrainingOperator
from airflow_vertex_dist.sensors import VertexJobSensor
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

primary = WorkerPool(
    machine=Machine(machine_type="n1-standard-4"),
    container=Container(image_uri="python:3.11", command=({sys.executable!r}, "-c", "print('trained')")),
)
spec = DistributedTrainingJob(
    display_name="readme-{{{{ ds_nodash }}}}",
    primary=primary,
    workers=WorkerPool.like(primary, replica_count=2),
)

with DAG("readme_dag", schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False):
    train = VertexTrainingOperator(task_id="train", spec=spec, deferrable=True)
    trained = VertexJobSensor(
        task_id="trained", job_name="{{{{ ti.xcom_pull(task_ids='train')['name'] }}}}", deferrable=True
    )
    train >> trained
"""


def load_dag(path: Path) -> Any:
    """The file's DAG, as a DAG processor finds it (the README's ``with DAG(...)`` names no variable)."""
    try:  # Airflow >= 3.2
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.1
        from airflow.models.dagbag import DagBag

    bag = DagBag(dag_folder=str(path))  # the example DAGs are off (tests/conftest.py)
    assert not bag.import_errors, bag.import_errors
    return bag.dags["readme_dag"]


def test_the_readme_dag_trains_waits_and_trains_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    migrate_db()
    path = tmp_path / "readme_dag.py"
    path.write_text(DAG_FILE)
    when = datetime(2026, 1, 2, tzinfo=timezone.utc)
    with testing.running_emulator(tmp_path / "emulator") as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        dag = load_dag(path)
        first = run_dag(dag, logical_date=when)
        assert (ti_state(first, "train"), ti_state(first, "trained")) == ("success", "success")
        job1 = dag_xcom(first, "train")
        assert job1["state"] == "JOB_STATE_SUCCEEDED" and job1["display_name"] == "readme-20260102"
        assert dag_xcom(first, "trained")["name"] == job1["name"]
        assert "Re-attaching" not in logged(capfd)

        again = run_dag(load_dag(path), logical_date=when)  # the same run: its tasks' next tries
        assert again.run_id == first.run_id
        assert (ti_state(again, "train"), ti_state(again, "trained")) == ("success", "success")
        # It ran again, and re-attached to the job its run already succeeded with (none billed twice).
        assert f"Re-attaching to {job1['name']} (SUCCEEDED)" in logged(capfd)
        job2 = dag_xcom(again, "train")
        assert job2["state"] == "JOB_STATE_SUCCEEDED" and job2["name"] == job1["name"]
        assert dag_xcom(again, "trained")["name"] == job1["name"]
        stored = {j["name"]: j["state"] for j in em.store.list("customJobs", testing.PARENT)}
        assert stored == {job1["name"]: "JOB_STATE_SUCCEEDED"}
