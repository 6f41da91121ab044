"""VertexJobTrigger inside Airflow's own TriggerRunner.run_trigger (the triggerer's coroutine)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from airflow.jobs.triggerer_job_runner import TriggerRunner

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.labels import run_labels
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.triggers import poller
from airflow_vertex_dist.triggers.jobs import VertexJobTrigger
from vertex_emulator import testing
from vertex_emulator.app import Emulator

MANAGED = run_labels("triggerer_tests", "wait", "manual__1", -1)
SLEEP = "import time; time.sleep(120)"


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> TriggerRunner:
    monkeypatch.setenv("AIRFLOW_DISABLE_GREENBACK_PORTAL", "true")
    return TriggerRunner()


def start(runner: TriggerRunner, trigger_id: int, trigger: VertexJobTrigger) -> asyncio.Task[Any]:
    runner.triggers[trigger_id] = {
        "task": None,
        "name": f"test-{trigger_id}",
        "events": 0,
        "is_watcher": False,
    }
    task = asyncio.create_task(runner.run_trigger(trigger_id, trigger))
    runner.triggers[trigger_id]["task"] = task
    return task


async def running_job(em: Emulator, display_name: str) -> str:
    hook = VertexJobsHook(retry_policy=RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=20.0))
    try:
        job = await asyncio.to_thread(
            hook.create_custom_job, testing.container_job(display_name, SLEEP, labels=MANAGED)
        )
    finally:
        hook.close()
    name = str(job["name"])
    await asyncio.to_thread(testing.wait_for_state, em, name, ["JOB_STATE_RUNNING"], 60.0)
    return name


async def test_user_kill_calls_on_kill_which_cancels(em: Emulator, runner: TriggerRunner) -> None:
    name = await running_job(em, "user-kill")
    task = start(runner, 1, VertexJobTrigger(job_name=name, poll_interval=0.05))
    await asyncio.sleep(0.3)
    runner.to_cancel.append(1)
    await runner.cancel_triggers()  # what a mark-failed / clear of the deferred task leads to
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.to_thread(testing.wait_for_state, em, name, ["JOB_STATE_CANCELLED"], 60.0)
    assert poller.active_pollers() == []


async def test_triggerer_shutdown_leaves_the_job_running(em: Emulator, runner: TriggerRunner) -> None:
    name = await running_job(em, "shutdown")
    task = start(runner, 2, VertexJobTrigger(job_name=name, poll_interval=0.05))
    await asyncio.sleep(0.3)
    task.cancel()  # shutdown / redistribution: no user-action message, so no on_kill
    with pytest.raises(asyncio.CancelledError):
        await task
    assert em.store.get(name)["state"] == "JOB_STATE_RUNNING"
    em.store.update(name, lambda job: job.update(state="JOB_STATE_SUCCEEDED"))  # let the test end cleanly


async def test_event_reaches_the_runner(em: Emulator, runner: TriggerRunner) -> None:
    name = str(
        em.store.insert("customJobs", testing.PARENT, testing.container_job("x", labels=MANAGED))["name"]
    )
    em.store.update(name, lambda job: job.update(state="JOB_STATE_EXPIRED"))
    await start(runner, 3, VertexJobTrigger(job_name=name, poll_interval=0.05))
    (entry,) = list(runner.events)
    assert entry.trigger_id == 3
    assert entry.event.payload["status"] == "error"
    assert entry.event.payload["message"] == f"job {name} expired before it could run"
