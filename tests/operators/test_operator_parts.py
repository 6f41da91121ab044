"""The operator's parts (``JobAttacher``, ``JobWait``, ``LadderWalk``, ``JobLogs``): made on first use,
bound to their operator through every copy Airflow makes of a task, and never serialized with the DAG.
No Airflow run, no emulator."""

from __future__ import annotations

import copy
import pickle
from datetime import datetime, timezone

from airflow.sdk import DAG

from airflow_vertex_dist.operators.job import VertexJobOperator
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Rung

from .test_training import spec

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
PARTS = ("attacher", "job_wait", "ladder_walk", "job_logs")


def _task() -> VertexTrainingOperator:
    return VertexTrainingOperator(task_id="t", spec=spec("pass"), capacity=[Rung(name="a"), Rung(name="l4")])


def _bound_to(op: VertexJobOperator) -> bool:
    walk = op.ladder_walk
    assert walk is not None
    return (
        op.attacher.host is op
        and op.job_logs.host is op
        and op.job_wait.host is op
        and op.job_wait.attacher is op.attacher
        and op.job_wait.logs is op.job_logs
        and walk.host is op
        and walk.attacher is op.attacher
        and walk.logs is op.job_logs
    )


def test_building_a_task_makes_no_part_and_a_task_without_a_ladder_has_no_walk() -> None:
    op = _task()
    assert not set(PARTS) & set(op.__dict__)
    assert VertexTrainingOperator(task_id="plain", spec=spec("pass")).ladder_walk is None


def test_the_parts_stay_bound_to_their_operator_through_copies() -> None:
    """``prepare_for_execution`` (a shallow copy that Airflow then renders), ``copy.deepcopy`` and
    pickling each leave every part bound to its own operator."""
    op = _task()
    assert _bound_to(op)
    op.attacher.job_name = "projects/p/locations/l/customJobs/1"
    running = op.prepare_for_execution()
    assert _bound_to(running) and _bound_to(op)
    assert running.attacher is not op.attacher and op.attacher.job_name is not None
    assert _bound_to(copy.deepcopy(op))
    again = pickle.loads(pickle.dumps(op))
    assert _bound_to(again) and again.attacher.job_name == op.attacher.job_name


def test_the_dag_serializes_without_the_parts() -> None:
    from airflow.serialization.serialized_objects import DagSerialization

    with DAG("parts", schedule=None, start_date=START) as dag:
        op = _task()
    assert _bound_to(op)
    data = DagSerialization.to_dict(dag)
    [task] = data["dag"]["tasks"]
    assert not set(PARTS) & set(task.get("__var", task))
    assert DagSerialization.from_dict(data).task_dict["t"].task_type == "VertexTrainingOperator"
