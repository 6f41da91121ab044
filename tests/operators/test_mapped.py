"""Mapped training tasks (``partial().expand()`` / ``expand_kwargs()``) run for real: each instance
renders and validates its own spec, and gets its own job, run labels and XCom; a retry of one
instance re-attaches to that instance's job (dag.test(), the emulator)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.hooks.labels import run_labels
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool
from vertex_emulator.app import Emulator

from .harness import PY, logged, run_dag

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
PARENT = "projects/test-project/locations/us-central1"


def spec(code: str, name: str, **extra: Any) -> dict[str, Any]:
    """A one-replica spec as the JSON dict a mapped task is expanded over (Jinja in its strings)."""
    model = DistributedTrainingJob(
        display_name="x",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(image_uri="python:3.11", command=(PY, "-c", code)),
        ),
    )
    raw: dict[str, Any] = model.model_dump(mode="json", exclude_unset=True)
    raw["display_name"] = name
    raw.update(extra)
    return raw


def instances(dr: Any, task_id: str) -> dict[int, tuple[str, Any]]:
    """``{map_index: (state, XCom return value)}`` of a mapped task's instances in the run ``dr``."""
    import json

    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        tis = session.scalars(
            select(TaskInstance).where(
                TaskInstance.dag_id == dr.dag_id,  # other tests' runs can have the same run id
                TaskInstance.run_id == dr.run_id,
                TaskInstance.task_id == task_id,
            )
        ).all()
        out = {}
        for ti in tis:
            value = session.scalar(
                select(XComModel.value).where(
                    XComModel.dag_id == dr.dag_id,
                    XComModel.run_id == dr.run_id,
                    XComModel.task_id == task_id,
                    XComModel.map_index == ti.map_index,
                    XComModel.key == "return_value",
                )
            )
            out[ti.map_index] = (str(ti.state), json.loads(value) if isinstance(value, str) else value)
    return out


def test_expand_gives_each_instance_its_own_rendered_job_labels_and_xcom(vertex_conn: Emulator) -> None:
    regions = ["north", "south", "west"]
    specs: list[Any] = [spec("print('ok')", f"seg-{r}-{{{{ ds_nodash }}}}") for r in regions]
    specs[2] = DistributedTrainingJob.model_validate(specs[2])  # a spec model maps as well as a dict
    with DAG("mapped_expand", schedule=None, start_date=START) as dag:
        VertexTrainingOperator.partial(task_id="train", deferrable=False, poll_interval=0.3).expand(
            spec=specs
        )
    when = datetime(2024, 6, 1, tzinfo=timezone.utc)
    dr = run_dag(dag, logical_date=when)
    got = instances(dr, "train")
    assert sorted(got) == [0, 1, 2]
    assert all(state == "success" for state, _ in got.values()), got
    jobs = {j["name"]: j for j in vertex_conn.store.list("customJobs", PARENT)}
    assert len(jobs) == 3
    for index, region in enumerate(regions):
        out = got[index][1]
        job = jobs[out["name"]]
        assert job["displayName"] == f"seg-{region}-20240601" == out["display_name"]
        labels = run_labels("mapped_expand", "train", dr.run_id, index)
        assert {k: job["labels"][k] for k in labels} == labels


def test_a_mapped_instance_validates_its_rendered_spec(vertex_conn: Emulator, capfd: Any) -> None:
    with DAG("mapped_bad", schedule=None, start_date=START, params={"out": "not-a-bucket"}) as dag:
        VertexTrainingOperator.partial(task_id="train", deferrable=False, poll_interval=0.3).expand_kwargs(
            [
                {"spec": spec("print('ok')", "good")},
                {"spec": spec("print('ok')", "bad", base_output_directory="{{ params.out }}")},
            ]
        )
    dr = run_dag(dag)
    got = instances(dr, "train")
    assert got[0][0] == "success" and got[1][0] == "failed"
    assert len(vertex_conn.store.list("customJobs", PARENT)) == 1
    log = logged(capfd)
    assert "invalid DistributedTrainingJob spec after rendering:" in log, log[-3000:]
    assert "spec.base_output_directory: " in log


def test_a_retry_of_one_instance_reattaches_to_its_own_job(
    vertex_conn: Emulator, tmp_path: Path, capfd: Any
) -> None:
    """Instance 2's first try dies (execution_timeout, cancel_on_kill=False leaves its job alone); its
    retry re-attaches to that job, not to its siblings'."""
    flag = tmp_path / "go"
    wait = f"import pathlib, time\nwhile not pathlib.Path({str(flag)!r}).exists(): time.sleep(0.05)"
    with DAG("mapped_retry", schedule=None, start_date=START) as dag:
        VertexTrainingOperator.partial(
            task_id="train",
            deferrable=False,
            poll_interval=0.3,
            cancel_on_kill=False,
            execution_timeout=timedelta(seconds=6),
            retries=1,
            retry_delay=timedelta(0),
            on_retry_callback=lambda context: flag.write_text("go"),
        ).expand(spec=[spec("pass", "a"), spec("pass", "b"), spec(wait, "c")])
    dr = run_dag(dag)
    got = instances(dr, "train")
    assert all(state == "success" for state, _ in got.values()), got
    assert flag.exists()  # instance 2's first try did die
    jobs = vertex_conn.store.list("customJobs", PARENT)
    assert len(jobs) == 3
    third = got[2][1]["name"]
    assert next(j for j in jobs if j["name"] == third)["displayName"] == "c"
    assert re.search(rf"Re-attaching to {third} \((RUNNING|SUCCEEDED)\)", logged(capfd))
