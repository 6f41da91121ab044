"""``VertexJobTrigger.on_kill`` cancels the job of a task a user ended, not of one whose trigger moved.

Airflow's triggerer calls ``on_kill`` with the same "user action" message when a user ended the
deferred task and when the trigger merely moved to another triggerer (two triggerers, this one's
heartbeat late): the task instance's state, read through the supervisor channel, tells them apart.
Here the channel is Airflow's in-process supervisor against the migrated metadata DB, the task
instance is put in each state by hand, and the job is a real emulator job.
"""

from __future__ import annotations

import asyncio
import types
from datetime import datetime, timezone
from typing import Any

import pytest
from airflow.sdk import DAG, task

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.labels import run_labels
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.triggers.jobs import VertexJobTrigger
from airflow_vertex_dist.triggers.task_state import task_instance_state
from vertex_emulator import testing
from vertex_emulator.app import Emulator

from .harness import run_dag

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]


def _run() -> Any:
    with DAG("on_kill_moved", schedule=None, start_date=datetime(2024, 1, 1, tzinfo=timezone.utc)) as dag:

        @task(task_id="train")
        def train() -> None:
            return None

        train()
    return run_dag(dag)


def _set_state(dr: Any, state: str | None) -> None:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import update

    with create_session() as session:
        session.execute(
            update(TaskInstance)
            .where(
                TaskInstance.dag_id == dr.dag_id,
                TaskInstance.run_id == dr.run_id,
                TaskInstance.task_id == "train",
            )
            .values(state=state)
        )


def _running_job(em: Emulator) -> str:
    labels = run_labels("on_kill_moved", "train", "manual__1", -1)
    with VertexJobsHook(retry_policy=RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=20.0)) as hook:
        job = hook.create_custom_job(
            testing.container_job("moved", "import time; time.sleep(300)", labels=labels)
        )
    name = str(job["name"])
    testing.wait_for_state(em, name, ["JOB_STATE_RUNNING"], 60.0)
    return name


def test_on_kill_cancels_only_when_the_task_is_no_longer_deferred(
    supervisor_channel: None, vertex_conn: Emulator
) -> None:
    dr = _run()
    name = _running_job(vertex_conn)
    trigger = VertexJobTrigger(job_name=name, poll_interval=0.1)
    trigger.task_instance = types.SimpleNamespace(
        dag_id=dr.dag_id, task_id="train", run_id=dr.run_id, map_index=-1
    )

    # The trigger moved to another triggerer: the task still waits, deferred. The job runs on.
    _set_state(dr, "deferred")
    assert asyncio.run(task_instance_state(trigger)) == "deferred"
    asyncio.run(trigger.on_kill())
    assert vertex_conn.service.cancel_counts().get(name, 0) == 0
    assert vertex_conn.store.get(name)["state"] == "JOB_STATE_RUNNING"

    # A user marked the task failed: on_kill cancels the job.
    _set_state(dr, "failed")
    assert asyncio.run(task_instance_state(trigger)) == "failed"
    asyncio.run(trigger.on_kill())
    testing.wait_for_state(vertex_conn, name, ["JOB_STATE_CANCELLED"], 60.0)
    assert vertex_conn.service.cancel_counts()[name] == 1


def test_on_kill_of_a_cleared_task_cancels(supervisor_channel: None, vertex_conn: Emulator) -> None:
    """A cleared task has no state until the scheduler takes it again: its job is cancelled."""
    dr = _run()
    name = _running_job(vertex_conn)
    trigger = VertexJobTrigger(job_name=name, poll_interval=0.1)
    trigger.task_instance = types.SimpleNamespace(
        dag_id=dr.dag_id, task_id="train", run_id=dr.run_id, map_index=-1
    )
    _set_state(dr, None)
    assert asyncio.run(task_instance_state(trigger)) == ""
    asyncio.run(trigger.on_kill())
    testing.wait_for_state(vertex_conn, name, ["JOB_STATE_CANCELLED"], 60.0)


def test_without_a_task_instance_on_kill_cancels_as_before(vertex_conn: Emulator) -> None:
    """Outside a triggerer (no task instance, no channel) the state is unknown: on_kill cancels."""
    name = _running_job(vertex_conn)
    trigger = VertexJobTrigger(job_name=name, poll_interval=0.1)
    assert asyncio.run(task_instance_state(trigger)) is None
    asyncio.run(trigger.on_kill())
    testing.wait_for_state(vertex_conn, name, ["JOB_STATE_CANCELLED"], 60.0)
