"""Concurrent tries converging in the wait (``converge_in_wait``), against the emulator.

A deferred try creates its job with one call (no List after the Create); its trigger does that List's
work from the shared poller's List:

* the first List that serves a converging waiter is not bounded by create time, so a job of the run
  older than its own is in it (a bounded one would miss it), and it costs no call of its own;
* 50 concurrent first tries make 50 Creates and no List; their 50 triggers end with one live job, the
  oldest: its trigger cancels the others, every other trigger fires ``reattach`` naming it;
* a job a stalled try's Create leaves later, with no one waiting on it, is cancelled by the waiting
  trigger at its next cycle; a trigger that finds its job already cancelled that way hands its task
  the kept job;
* a job with copied labels and another spec is left alone, a live job of an earlier retry budget is
  cancelled, one of a later budget is not (a stale trigger never cancels a newer try's job).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.find_or_create import LIVE_STATES
from airflow_vertex_dist.hooks.labels import run_labels, task_labels
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.jobs.events import read_event, superseded_job
from airflow_vertex_dist.triggers import poller
from airflow_vertex_dist.triggers.jobs import VertexJobTrigger
from tests.triggers.test_poller import delta, eventually
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults

FAST_RETRY = RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=30.0, rpc_timeout_s=10.0)
PROJECT = "test-project"
PARENT = f"projects/{PROJECT}/locations/us-central1"
SLEEP = "import time; time.sleep(120)"


@pytest.fixture
def queued(em: Emulator) -> Iterator[None]:
    """New jobs stay QUEUED (live, no replica process) until the test ends."""
    update_faults(em.config.faults, {"queued_s": 300.0})
    yield
    update_faults(em.config.faults, {"queued_s": 0.0})


def _labels(test: str) -> dict[str, str]:
    return run_labels("converge_tests", test, "backfill__2026-12-01T00:00:00+00:00", -1)


def _insert(em: Emulator, body: dict[str, Any], labels: dict[str, str]) -> str:
    """A job as a try's Create would leave it (the store stamps its create time and QUEUED)."""
    job = {**body, "labels": {**body.get("labels", {}), **labels}}
    return str(em.store.insert("customJobs", PARENT, job)["name"])


def _state(em: Emulator, name: str) -> str:
    return str(em.store.get(name)["state"])


async def _events(triggers: list[VertexJobTrigger]) -> dict[str, asyncio.Task[dict[str, Any]]]:
    async def first(trigger: VertexJobTrigger) -> dict[str, Any]:
        async for event in trigger.run():
            payload: dict[str, Any] = event.payload
            return payload
        raise AssertionError("no event")

    return {t.job_name: asyncio.create_task(first(t)) for t in triggers}


async def _stop(tasks: dict[str, asyncio.Task[dict[str, Any]]]) -> None:
    for task in tasks.values():
        task.cancel()
    await asyncio.gather(*tasks.values(), return_exceptions=True)


async def test_the_first_list_of_a_converging_waiter_is_unbounded_and_brings_older_siblings(
    em: Emulator,
) -> None:
    """A new converging waiter is served by one List without the create-time bound, not by a Get: a
    job of its run made before its own is among the siblings it gets, where the bounded List of later
    cycles no longer shows it."""
    labels = task_labels(_labels("unbounded"), testing.container_job("u", SLEEP), "m1")
    body = testing.container_job("u", SLEEP)
    older = _insert(em, body, labels)
    own = _insert(em, body, labels)
    other_run = _insert(em, body, task_labels(_labels("unbounded-other"), body, "m1"))
    shared = poller.JobPoller(poller.PollerKey("vertex_dist_default", PROJECT, "us-central1", "customJobs"))
    sub = poller._Subscription(shared, own, 1.0, labels)
    plain = poller._Subscription(shared, other_run, 1.0)  # a waiter that does not converge
    shared._subs = {own: {sub}, other_run: {plain}}  # cycles by hand, no poll loop
    filters: list[str | None] = []
    real_list = shared.hook.list_jobs

    async def recording_list(kind: str, **kwargs: Any) -> Any:
        filters.append(kwargs.get("filter"))
        return await real_list(kind, **kwargs)

    shared.hook.list_jobs = recording_list  # type: ignore[method-assign]
    try:
        before = em.call_counts()
        await shared.poll_once()
        assert delta(em.call_counts(), before) == {"ListCustomJobs": 1}  # no Get for either new waiter
        assert filters == [poller.list_filter(None)]
        assert (await sub.next())["name"] == own
        assert {job["name"] for job in sub.siblings} == {older, own}
        assert sub.checked
        assert (await plain.next())["name"] == other_run and plain.siblings == []
        await shared.poll_once()
        # bounded again, by the oldest job waited on: the older sibling is no longer in the List
        assert filters[-1] == poller.list_filter(str(em.store.get(own)["createTime"]))
        await sub.next()
        assert {job["name"] for job in sub.siblings} == {own}
    finally:
        await shared.hook.close()


async def test_fifty_concurrent_first_tries_converge_in_their_triggers(em: Emulator, queued: None) -> None:
    """50 copies of a first try at once, each with ``converge_in_wait``: 50 Creates and not one List.
    Their 50 triggers, in one triggerer, then converge for one shared List a cycle: the oldest job's
    trigger cancels the other 49 and keeps waiting; each of the other 49 fires ``reattach`` naming the
    oldest and its own job. One live job is left."""
    labels = _labels("fifty")
    body = testing.container_job("fifty", SLEEP)
    callers = 50
    barrier = threading.Barrier(callers)
    made: list[tuple[dict[str, Any], bool]] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
                hook.get_conn()
                barrier.wait(timeout=60)
                made.append(
                    hook.find_or_create(
                        "customJobs",
                        body,
                        labels=labels,
                        retry_budget="m1",
                        first_try=True,
                        converge_in_wait=True,
                    )
                )
        except BaseException as exc:  # reported below
            errors.append(exc)

    before = em.call_counts()
    threads = [threading.Thread(target=one) for _ in range(callers)]
    await asyncio.to_thread(lambda: ([t.start() for t in threads], [t.join(timeout=120) for t in threads]))
    assert not errors, errors[:3]
    assert delta(em.call_counts(), before) == {"CreateCustomJob": callers}
    assert all(created for _, created in made)
    names = [str(job["name"]) for job, _ in made]
    oldest = min((em.store.get(name) for name in names), key=lambda job: (job["createTime"], job["name"]))[
        "name"
    ]

    converge = task_labels(labels, body, "m1")
    tasks = await _events([VertexJobTrigger(job_name=n, poll_interval=0.5, converge=converge) for n in names])
    try:
        others = [n for n in names if n != oldest]
        await eventually(lambda: all(tasks[n].done() for n in others), timeout=60)
        for name in others:
            event = tasks[name].result()
            verdict, job = read_event(event)
            assert verdict.status == "reattach", event
            assert job is not None and job["name"] == oldest
            assert superseded_job(event) == name
        await eventually(lambda: all(_state(em, n) not in LIVE_STATES for n in others), timeout=60)
        assert not tasks[oldest].done()  # the kept job's trigger still waits
        assert _state(em, oldest) == "JOB_STATE_QUEUED"
        (shared,) = poller.active_pollers()
        assert shared.get_calls == 0  # every waiter was served by the Lists
    finally:
        await _stop(tasks)
        with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
            hook.cancel_job(oldest)


async def test_a_job_a_stalled_create_leaves_later_is_cancelled_by_the_waiting_trigger(
    em: Emulator,
) -> None:
    """A try's Create that lands after another try made its job and began waiting (a try stalled in
    its Create, then refused its deferral: no one waits on its job) makes a newer job of the run: the
    waiting trigger keeps its own (the oldest) and cancels the newcomer at its next cycle."""
    labels = task_labels(_labels("stalled"), testing.container_job("s", SLEEP), "m1")
    body = testing.container_job("s", SLEEP)
    own = _insert(em, body, labels)
    tasks = await _events([VertexJobTrigger(job_name=own, poll_interval=0.3, converge=labels)])
    try:
        await eventually(lambda: bool(poller.active_pollers()) and own in poller.active_pollers()[0]._known)
        late = _insert(em, body, labels)
        await eventually(lambda: _state(em, late) not in LIVE_STATES)
        assert _state(em, own) == "JOB_STATE_QUEUED" and not tasks[own].done()
    finally:
        await _stop(tasks)
        em.store.update(own, lambda job: job.update(state="JOB_STATE_CANCELLED"))


async def test_a_trigger_whose_job_another_trigger_cancelled_reattaches_to_the_kept_one(
    em: Emulator,
) -> None:
    """The oldest job's trigger may cancel a duplicate before the duplicate's own trigger looked (a
    task deferring later, in another triggerer): that trigger then finds its job cancelled with no List
    behind it, looks the run up once itself, and hands its task the kept job instead of failing it."""
    body = testing.container_job("c", SLEEP)
    labels = task_labels(_labels("cancelled-first"), body, "m1")
    kept = _insert(em, body, labels)
    late = _insert(em, body, labels)
    first = await _events([VertexJobTrigger(job_name=kept, poll_interval=0.3, converge=labels)])
    try:
        await eventually(lambda: _state(em, late) == "JOB_STATE_CANCELLED")
        before = em.call_counts()
        second = await _events([VertexJobTrigger(job_name=late, poll_interval=0.3, converge=labels)])
        event = await asyncio.wait_for(second[late], timeout=30)
        verdict, job = read_event(event)
        assert verdict.status == "reattach" and job is not None and job["name"] == kept, event
        assert superseded_job(event) == late
        assert delta(em.call_counts(), before).get("ListCustomJobs", 0) >= 1
        assert not first[kept].done()
    finally:
        await _stop(first)
        em.store.update(kept, lambda job: job.update(state="JOB_STATE_CANCELLED"))


async def test_copied_labels_are_left_alone_and_only_earlier_budgets_are_cancelled(
    em: Emulator, capfd: pytest.CaptureFixture[str]
) -> None:
    """Beside a waiter's job: an older job with the task's labels and fingerprint but another spec
    (planted) is neither kept nor cancelled; a live job of an earlier budget (m0) is cancelled; one of a
    later budget (m2: a newer try, this trigger being stale) is left running."""
    run = _labels("budgets")
    body = testing.container_job("b", SLEEP)
    labels = task_labels(run, body, "m1")
    planted = _insert(em, testing.container_job("b", "import os; print('another spec')"), labels)
    earlier = _insert(em, body, task_labels(run, body, "m0"))
    later = _insert(em, body, task_labels(run, body, "m2"))
    own = _insert(em, body, labels)
    tasks = await _events([VertexJobTrigger(job_name=own, poll_interval=0.3, converge=labels)])
    try:
        await eventually(lambda: _state(em, earlier) not in LIVE_STATES)
        (shared,) = poller.active_pollers()
        await shared.next_cycle()
        assert not tasks[own].done()
        assert _state(em, planted) == "JOB_STATE_QUEUED"
        assert _state(em, later) == "JOB_STATE_QUEUED"
        out, err = capfd.readouterr()
        assert f"Not converging with {planted}" in out + err
    finally:
        await _stop(tasks)
        for name in (planted, later, own):
            em.store.update(name, lambda job: job.update(state="JOB_STATE_CANCELLED"))


def test_reattach_events_are_checked_when_the_task_resumes() -> None:
    job = {"name": f"{PARENT}/customJobs/1", "state": "JOB_STATE_QUEUED"}
    event = {"status": "reattach", "message": "m", "job": job, "superseded": f"{PARENT}/customJobs/2"}
    verdict, got = read_event(event)
    assert (verdict.status, verdict.ok, got, superseded_job(event)) == (
        "reattach",
        False,
        job,
        event["superseded"],
    )
    for bad in (
        {k: v for k, v in event.items() if k != "superseded"},
        {**event, "job": None},
        {**event, "superseded": ""},
        {"status": "success", "message": "m", "job": job, "superseded": "x"},
    ):
        with pytest.raises(ValueError, match="event:"):
            read_event(bad)


def test_converge_must_name_the_run() -> None:
    for bad in ({"airflow-spec": "s"}, {"airflow-run": 1}, ["airflow-run"]):
        with pytest.raises(ValueError, match="converge: the task's labels"):
            VertexJobTrigger(job_name=f"{PARENT}/customJobs/1", converge=bad)  # type: ignore[arg-type]
