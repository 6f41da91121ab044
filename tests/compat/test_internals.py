"""The Airflow internals the package uses (``airflow_vertex_dist._compat``), each against this cell's Airflow.

Airflow has no public API for these, so nothing but a run on every supported release says they still
work: the supervisor channel's presence, a task instance's state read from trigger code, and the
XComs of a run read from the metadata DB by the listener. Here they run for real: a trigger inside
``dag.test()`` (Airflow's in-process supervisor) reads task states, and the listener's read finds the
owner records real tasks pushed. An internal that moved or changed its answer fails here.
"""

from __future__ import annotations

import types
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from typing import Any

import pytest
from airflow.sdk import DAG, BaseOperator, get_current_context, task
from airflow.triggers.base import BaseTrigger, TriggerEvent
from operators.fixtures import airflow_db  # noqa: F401 (the fixture)
from operators.harness import dag_xcom, run_dag, ti_state

from airflow_vertex_dist import _compat
from airflow_vertex_dist.links import OWNER_XCOM_KEY, OwnedJob, OwnerRecord
from airflow_vertex_dist.listeners import _owner_records, owned_job
from airflow_vertex_dist.triggers.task_state import task_instance_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)


class StateTrigger(BaseTrigger):
    """Reads task states of its own run through the package's internals, and fires them."""

    def __init__(self, dag_id: str, run_id: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.dag_id = dag_id
        self.run_id = run_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", {
            "dag_id": self.dag_id,
            "run_id": self.run_id,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        async def state(task_id: str, map_index: int = -1) -> str | None:
            return await _compat.task_state(self.dag_id, task_id, self.run_id, map_index)

        # as the triggerer gives a trigger its task instance (dag.test() does not)
        self.task_instance = types.SimpleNamespace(  # type: ignore[assignment]
            dag_id=self.dag_id, task_id="wait", run_id=self.run_id, map_index=None
        )
        yield TriggerEvent(  # type: ignore[no-untyped-call]
            {
                "channel": _compat.has_supervisor_channel(),
                "async_channel": _compat.async_supervisor_channel(),
                "resume_race": _compat.resume_race_possible(),
                "up": await state("up"),
                "mapped_0": await state("mapped", 0),
                "mapped_1": await state("mapped", 1),
                "mapped_9": await state("mapped", 9),
                "after": await state("after"),
                "missing": await state("no_such_task"),
                "own": await task_instance_state(self),
            }
        )


class WaitOperator(BaseOperator):
    def execute(self, context: Any) -> None:
        run_id = context["run_id"]
        self.defer(trigger=StateTrigger(self.dag_id, run_id), method_name="done")

    def done(self, context: Any, event: Any) -> Any:
        return event


def test_a_trigger_reads_task_states_through_the_supervisor_channel() -> None:
    with DAG("internals_task_states", schedule=None, start_date=START) as dag:

        @task(task_id="up")
        def up() -> None:
            return None

        @task(task_id="mapped")
        def mapped(x: int) -> int:
            return x

        @task(task_id="after")
        def after() -> None:
            return None

        wait = WaitOperator(task_id="wait")
        [up(), mapped.expand(x=[0, 1])] >> wait >> after()
    dr = run_dag(dag)
    assert ti_state(dr, "wait") == "success"
    states = dag_xcom(dr, "wait")
    assert states == {
        "channel": True,
        "async_channel": False,  # dag.test()'s in-process channel answers sync calls only
        "resume_race": False,  # dag.test() resumes the task itself: no scheduler, no executor
        "up": "success",
        "mapped_0": "success",
        "mapped_1": "success",
        "mapped_9": "",
        "after": "",  # not run yet: no state
        "missing": "",
        # dag.test() sets a deferred task QUEUED before it runs its trigger inline
        "own": "queued",
    }


def test_dag_test_runs_its_tasks_against_one_in_process_api() -> None:
    """The harness (``airflow_db``) gives this release's ``dag.test()`` one in-process Execution API
    for all its tasks, as Airflow 3.3 keeps it (``share_in_process_api``)."""
    from airflow.sdk.execution_time import supervisor

    assert supervisor.in_process_api_server() is supervisor.in_process_api_server()


def test_outside_a_supervised_process_there_is_no_channel_and_no_state() -> None:
    import asyncio

    assert not _compat.has_supervisor_channel()
    assert not _compat.async_supervisor_channel()
    assert not _compat.resume_race_possible()
    assert asyncio.run(_compat.task_state("d", "t", "r")) is None


def test_the_listener_reads_the_owner_records_real_tasks_pushed() -> None:
    def record(i: int) -> OwnerRecord:
        return OwnedJob(
            f"projects/p/locations/us-central1/customJobs/{i}", "vertex_dist_default", (f"sa{i}@p",)
        ).record()

    with DAG("internals_owner_records", schedule=None, start_date=START) as dag:

        @task(task_id="owner")
        def owner() -> None:
            get_current_context()["ti"].xcom_push(key=OWNER_XCOM_KEY, value=record(7))

        @task(task_id="mapped_owner")
        def mapped_owner(i: int) -> None:
            get_current_context()["ti"].xcom_push(key=OWNER_XCOM_KEY, value=record(i))

        @task(task_id="bystander")
        def bystander() -> None:
            get_current_context()["ti"].xcom_push(key="other", value=record(99))

        owner()
        mapped_owner.expand(i=[1, 2])
        bystander()
    dr = run_dag(dag)

    def ti(task_id: str, map_index: int = -1) -> Any:
        return types.SimpleNamespace(dag_id=dr.dag_id, task_id=task_id, run_id=dr.run_id, map_index=map_index)

    def value(task_id: str, map_index: int = -1) -> Any:
        rows = _owner_records(dr.dag_id, dr.run_id, task_id, map_index)
        return rows[0]["value"] if rows else None

    assert value("owner") == record(7)
    assert value("mapped_owner", 0) == record(1)
    assert value("mapped_owner", 1) == record(2)
    assert value("bystander") is None
    assert value("owner", 3) is None
    run_records = _owner_records(dr.dag_id, dr.run_id)
    assert sorted(r["value"]["name"] for r in run_records) == sorted(record(i)["name"] for i in (7, 1, 2))
    assert sorted((r["task_id"], r["map_index"]) for r in run_records) == [
        ("mapped_owner", 0),
        ("mapped_owner", 1),
        ("owner", -1),
    ]
    # the connection comes from the task's rendered template fields, never from the record: these
    # tasks have no connection field, so the listener has nothing to cancel with
    assert _compat.rendered_task_fields(dr.dag_id, dr.run_id, "mapped_owner", 1) is not None
    assert _compat.rendered_task_fields(dr.dag_id, dr.run_id, "owner", 3) is None
    assert owned_job(ti("owner")) is None
    rows = _compat.xcom_rows("other", dag_id=dr.dag_id, run_id=dr.run_id)
    assert [row["value"] for row in rows] == [record(99)]


def test_dags_in_file_finds_what_the_dag_processor_finds(tmp_path: Any) -> None:
    """A module global, a ``with DAG(...)`` block without ``as`` and a called ``@dag`` function: the
    DagBag's auto-registration finds all three; a file that fails to import gives Airflow's error."""
    path = tmp_path / "three.py"
    path.write_text(
        "from datetime import datetime, timezone\n"
        "from airflow.sdk import DAG, dag\n"
        "START = datetime(2024, 1, 1, tzinfo=timezone.utc)\n"
        "named = DAG('named', schedule=None, start_date=START)\n"
        "with DAG('unnamed', schedule=None, start_date=START):\n"
        "    pass\n"
        "@dag(schedule=None, start_date=START)\n"
        "def decorated():\n"
        "    pass\n"
        "decorated()\n"
    )
    dags, errors = _compat.dags_in_file(str(path))
    assert sorted(dags) == ["decorated", "named", "unnamed"] and errors == {}
    broken = tmp_path / "broken.py"
    broken.write_text("from airflow.sdk import DAG\nraise RuntimeError('broken on purpose')\n")
    dags, errors = _compat.dags_in_file(str(broken))
    assert dags == {} and "broken on purpose" in "".join(errors.values())
