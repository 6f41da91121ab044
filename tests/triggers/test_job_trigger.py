"""VertexJobTrigger.run() to every terminal state, against the emulator (stock async client)."""

from __future__ import annotations

import asyncio
import datetime
import time
from pathlib import Path
from typing import Any

import pytest
from airflow.triggers.base import TriggerEvent
from structlog.testing import capture_logs

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.labels import run_labels
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.triggers import poller
from airflow_vertex_dist.triggers.jobs import VertexJobTrigger
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults

PARENT = testing.PARENT
MANAGED = run_labels("trigger_tests", "wait", "manual__1", -1)
SLEEP = "import time; time.sleep(120)"
FAST = RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=20.0, rpc_timeout_s=10.0)


async def run_to_end(trigger: VertexJobTrigger, timeout: float = 60.0) -> dict[str, Any]:
    """Every event the trigger yields until run() returns; asserts there is exactly one."""
    events: list[TriggerEvent] = []

    async def collect() -> None:
        async for event in trigger.run():
            events.append(event)

    await asyncio.wait_for(collect(), timeout)  # not asyncio.timeout: the package supports Python 3.10
    assert len(events) == 1, events
    payload: dict[str, Any] = events[0].payload
    return payload


def stored_job(
    em: Emulator,
    state: str,
    *,
    labels: dict[str, str] | None = MANAGED,
    kind: str = "customJobs",
    **fields: Any,
) -> str:
    """A job written straight into the emulator's store (not run): for states processes cannot produce."""
    body = (
        testing.container_job("synthetic", labels=labels) if kind == "customJobs" else testing.tuning_job("s")
    )
    if labels and kind != "customJobs":
        body["labels"] = dict(labels)
    name = str(em.store.insert(kind, PARENT, body)["name"])  # type: ignore[arg-type]
    set_state(em, name, state, **fields)
    return name


def set_state(em: Emulator, name: str, state: str, **fields: Any) -> None:
    em.store.update(name, lambda job: job.update(state=state, **fields))


def trigger(name: str, **kwargs: Any) -> VertexJobTrigger:
    kwargs.setdefault("poll_interval", 0.05)
    return VertexJobTrigger(job_name=name, **kwargs)


async def create(body: dict[str, Any], kind: str = "customJobs") -> dict[str, Any]:
    hook = VertexJobsHook(retry_policy=FAST)
    try:
        return await asyncio.to_thread(hook.create_job, kind, body)
    finally:
        hook.close()


async def test_succeeded_real_job(em: Emulator) -> None:
    job = await create(testing.container_job("ok", "print('done')", labels=MANAGED))
    event = await run_to_end(trigger(job["name"]))
    assert event["status"] == "success"
    assert event["message"] == f"job {job['name']} succeeded"
    assert event["job"]["state"] == "JOB_STATE_SUCCEEDED"
    assert event["job"]["id"] == job["name"].rsplit("/", 1)[1]
    assert "jobSpec" not in event["job"]  # compact


async def test_failed_real_job_carries_the_error(em: Emulator) -> None:
    job = await create(testing.container_job("boom", "import sys; print('bad'); sys.exit(3)", labels=MANAGED))
    event = await run_to_end(trigger(job["name"]))
    assert event["status"] == "error"
    assert event["message"].startswith(f"job {job['name']} failed: ")
    assert "3" in event["message"]
    assert event["job"]["error"]["message"] in event["message"]


async def test_tuning_job_to_its_end(em: Emulator) -> None:
    code = "import hypertune; hypertune.HyperTune().report_hyperparameter_tuning_metric('score', 0.5)"
    job = await create(
        testing.tuning_job("tune", code, max_trials=2, labels=MANAGED), "hyperparameterTuningJobs"
    )
    event = await run_to_end(trigger(job["name"]))
    assert event["status"] == "success", event["message"]
    assert [t["state"] for t in event["job"]["trials"]] == ["SUCCEEDED", "SUCCEEDED"]
    assert event["job"]["studySpec"]["metrics"][0]["metricId"] == "score"


async def test_cancelled_while_waiting(em: Emulator) -> None:
    job = await create(testing.container_job("long", SLEEP, labels=MANAGED))
    task = asyncio.create_task(run_to_end(trigger(job["name"])))
    await asyncio.to_thread(testing.wait_for_state, em, job["name"], ["JOB_STATE_RUNNING"], 60.0)
    hook = VertexJobsHook(retry_policy=FAST)
    await asyncio.to_thread(hook.cancel_job, job["name"])
    event = await task
    assert event["status"] == "error"
    assert event["message"].startswith(f"job {job['name']} was cancelled")
    assert event["job"]["state"] == "JOB_STATE_CANCELLED"


@pytest.mark.parametrize("labels", [MANAGED, None], ids=["managed", "unmanaged"])
async def test_expired(em: Emulator, labels: dict[str, str] | None) -> None:
    name = stored_job(em, "JOB_STATE_QUEUED", labels=labels)
    task = asyncio.create_task(run_to_end(trigger(name)))
    await asyncio.sleep(0.2)
    assert not task.done()
    set_state(em, name, "JOB_STATE_EXPIRED")
    event = await task
    assert event["status"] == "error"
    assert event["message"] == f"job {name} expired before it could run"


async def test_paused_within_grace_then_resumes(em: Emulator) -> None:
    name = stored_job(em, "JOB_STATE_PAUSED")
    task = asyncio.create_task(run_to_end(trigger(name, paused_grace=60)))
    await asyncio.sleep(0.3)
    assert not task.done()
    set_state(em, name, "JOB_STATE_SUCCEEDED")
    assert (await task)["status"] == "success"


async def test_paused_past_grace_cancels_and_a_retry_creates_a_new_job(em: Emulator) -> None:
    """A paused job is billed for nothing: past its grace it is cancelled, so a retry does not re-attach."""
    labels = run_labels("trigger_tests", "paused", "manual__1", -1)  # this test's own task instance
    name = stored_job(em, "JOB_STATE_PAUSED", labels=labels)
    event = await run_to_end(trigger(name, paused_grace=0.3))
    assert event["status"] == "error"
    assert event["message"].startswith(f"job {name} stayed PAUSED for ")
    assert event["message"].endswith("(grace 0.3s); the job was cancelled")
    assert em.store.get(name)["state"] == "JOB_STATE_CANCELLED"  # type: ignore[index]
    assert event["job"]["state"] == "JOB_STATE_CANCELLED"
    hook = VertexJobsHook(retry_policy=FAST)
    try:
        body = testing.container_job("retry", "print('again')")
        retried, created = await asyncio.to_thread(hook.find_or_create, "customJobs", body, labels=labels)
    finally:
        hook.close()
    assert created and retried["name"] != name


async def test_paused_past_grace_without_cancel_on_kill_stays_paused(em: Emulator) -> None:
    name = stored_job(em, "JOB_STATE_PAUSED")
    event = await run_to_end(trigger(name, paused_grace=0.3, cancel_on_kill=False))
    assert event["status"] == "error"
    assert event["message"].endswith("(grace 0.3s); the job was left PAUSED (cancel_on_kill=False)")
    assert em.store.get(name)["state"] == "JOB_STATE_PAUSED"  # type: ignore[index]


def logged(logs: list[dict[str, Any]]) -> list[str]:
    return [str(entry.get("event")) for entry in logs]


async def test_progress_while_deferred_shows_replicas_up(em: Emulator, tmp_path: Path) -> None:
    """The triggerer's log (the task log in Airflow 3) shows state changes and replicas up k/n."""
    go = tmp_path / "go"
    code = f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)"
    body = testing.container_job("progress", code, workers=1, labels=MANAGED, enableWebAccess=True)
    job = await create(body)
    with capture_logs() as logs:
        task = asyncio.create_task(run_to_end(trigger(job["name"])))
        deadline = time.monotonic() + 60
        while "replicas up 2/2: workerpool0-0, workerpool1-0" not in logged(logs):
            assert time.monotonic() < deadline, logged(logs)
            assert not task.done(), logged(logs)
            await asyncio.sleep(0.05)
        go.write_text("")
        event = await task
    assert event["status"] == "success", event["message"]
    lines = logged(logs)
    assert any(line.startswith(f"job {job['name']}: submitted -> ") for line in lines), lines
    assert f"job {job['name']}: RUNNING -> SUCCEEDED" in lines
    ups = [line for line in lines if line.startswith("replicas up ")]
    assert len(ups) == len(set(ups)), ups  # only changes are logged


async def test_progress_while_deferred_shows_trials_done(em: Emulator) -> None:
    code = "import hypertune; hypertune.HyperTune().report_hyperparameter_tuning_metric('score', 0.5)"
    job = await create(
        testing.tuning_job("tune", code, max_trials=2, labels=MANAGED), "hyperparameterTuningJobs"
    )
    with capture_logs() as logs:
        event = await run_to_end(trigger(job["name"]))
    assert event["status"] == "success", event["message"]
    lines = logged(logs)
    done = [line for line in lines if line.startswith("trials done ")]
    assert done, lines
    final = "trials done 2/2 (succeeded 2, infeasible 0, active 0); best score=0.5 (trial "
    assert done[-1].startswith(final), done
    assert f"job {job['name']}: RUNNING -> SUCCEEDED" in lines


@pytest.mark.parametrize(("setting", "status"), [("fail", "error"), ("succeed", "success")])
async def test_partially_succeeded(em: Emulator, setting: str, status: str) -> None:
    name = stored_job(em, "JOB_STATE_PARTIALLY_SUCCEEDED", kind="hyperparameterTuningJobs")
    event = await run_to_end(trigger(name, partial_success=setting))
    assert event["status"] == status
    assert "PARTIALLY_SUCCEEDED (" in event["message"] and f"partial_success='{setting}'" in event["message"]


async def test_deleted_job(em: Emulator) -> None:
    name = stored_job(em, "JOB_STATE_RUNNING")
    task = asyncio.create_task(run_to_end(trigger(name)))
    await asyncio.sleep(0.2)
    em.store.delete(name)
    event = await task
    assert event == {"status": "error", "message": f"job {name} does not exist", "job": None}


async def test_non_transient_error_ends_the_wait(em: Emulator) -> None:
    name = stored_job(em, "JOB_STATE_RUNNING", labels=None)
    update_faults(
        em.config.faults, {"error_rate": {"GetCustomJob": 1.0}, "error_codes": ["PERMISSION_DENIED"]}
    )
    event = await run_to_end(trigger(name))
    assert event["status"] == "error"
    assert "403" in event["message"] and "injected fault" in event["message"]


async def test_transient_errors_never_end_the_wait(em: Emulator) -> None:
    name = stored_job(em, "JOB_STATE_RUNNING")
    update_faults(
        em.config.faults,
        {
            "error_rate": {"*": 1.0},
            "error_codes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED", "INTERNAL"],
            "seed": 1,
        },
    )
    task = asyncio.create_task(run_to_end(trigger(name)))
    # the poller's own retries (0.5 s deadline here) run out several times over; the trigger waits on
    deadline = asyncio.get_running_loop().time() + 10
    while sum(em.service.injector.injected_counts().values()) < 30:
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    assert not task.done()
    update_faults(em.config.faults, {"error_rate": {"*": 0.3}})
    set_state(em, name, "JOB_STATE_SUCCEEDED")
    assert (await task)["status"] == "success"


async def test_rest_transport(em: Emulator, rest_conn: str) -> None:
    name = stored_job(em, "JOB_STATE_RUNNING")
    task = asyncio.create_task(run_to_end(trigger(name)))
    await asyncio.sleep(0.2)
    set_state(em, name, "JOB_STATE_FAILED", error={"code": 13, "message": "replica workerpool0-0 exited 1"})
    event = await task
    assert event["message"] == f"job {name} failed: replica workerpool0-0 exited 1"


async def test_on_kill_cancels_the_job(em: Emulator) -> None:
    job = await create(testing.container_job("kill-me", SLEEP, labels=MANAGED))
    trig = trigger(job["name"])
    task = asyncio.create_task(run_to_end(trig))
    await asyncio.to_thread(testing.wait_for_state, em, job["name"], ["JOB_STATE_RUNNING"], 60.0)
    # what the triggerer does when a user kills the deferred task: cancel run(), then on_kill()
    task.cancel("user-action")
    with pytest.raises(asyncio.CancelledError):
        await task
    await trig.on_kill()
    await asyncio.to_thread(testing.wait_for_state, em, job["name"], ["JOB_STATE_CANCELLED"], 60.0)
    assert poller.active_pollers() == []  # the waiter left; the poller stopped


async def test_on_kill_respects_cancel_on_kill_false(em: Emulator) -> None:
    name = stored_job(em, "JOB_STATE_RUNNING")
    await trigger(name, cancel_on_kill=False).on_kill()
    assert em.store.get(name)["state"] == "JOB_STATE_RUNNING"


async def test_restart_resumes_without_cancelling(em: Emulator) -> None:
    """A triggerer restart cancels run() without on_kill; the rebuilt trigger waits on the same job."""
    job = await create(testing.container_job("restart", SLEEP, labels=MANAGED))
    first = trigger(job["name"])
    task = asyncio.create_task(run_to_end(first))
    await asyncio.to_thread(testing.wait_for_state, em, job["name"], ["JOB_STATE_RUNNING"], 60.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert em.store.get(job["name"])["state"] == "JOB_STATE_RUNNING"
    classpath, kwargs = first.serialize()
    second = VertexJobTrigger(**kwargs)
    resumed = asyncio.create_task(run_to_end(second))
    await asyncio.sleep(0.2)
    assert not resumed.done()
    hook = VertexJobsHook(retry_policy=FAST)
    await asyncio.to_thread(hook.cancel_job, job["name"])
    assert (await resumed)["message"].startswith(f"job {job['name']} was cancelled")


@pytest.mark.parametrize("how", ["timeout_after", "timeout"])
async def test_deadline_cancels_the_job(em: Emulator, how: str) -> None:
    job = await create(testing.container_job("slow", SLEEP, labels=MANAGED))
    if how == "timeout":
        trig = trigger(job["name"], timeout=2.0)
    else:
        trig = trigger(job["name"])
        trig.timeout_after = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)
    event = await run_to_end(trig)
    assert event["status"] == "error"
    assert (
        "the task timed out after waiting" in event["message"] and "the job was cancelled" in event["message"]
    )
    await asyncio.to_thread(testing.wait_for_state, em, job["name"], ["JOB_STATE_CANCELLED"], 60.0)
