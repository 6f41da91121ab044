"""The resume hold (``triggers/base.py``'s ``RESUME_HOLD_S``): in a triggerer, an event that comes
within the hold of the deferral waits for the rest of it; later events, and triggers run by
``dag.test()`` or called directly, are not held."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from airflow.triggers.base import TriggerEvent

from airflow_vertex_dist.jobs.events import JobEvent
from airflow_vertex_dist.jobs.types import Job
from airflow_vertex_dist.triggers import base
from airflow_vertex_dist.triggers.base import RESUME_HOLD_S, JobWaitTrigger
from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

NAME = "projects/p/locations/us-central1/customJobs/123"


class EndsAtOnce(JobWaitTrigger):
    """A wait whose job has already ended: its event is ready the moment it starts."""

    async def decide(self, job: Job) -> JobEvent | None:  # pragma: no cover - never polled
        return None

    async def _wait(self) -> AsyncIterator[TriggerEvent]:
        yield TriggerEvent({"status": "success", "message": "ended", "job": None})  # type: ignore[no-untyped-call]


def first_event(trigger: JobWaitTrigger) -> tuple[TriggerEvent, float]:
    async def one() -> TriggerEvent:
        return await anext(trigger.run())

    event = asyncio.run(asyncio.wait_for(one(), timeout=60))
    return event, time.time()


def test_the_deferral_time_is_when_the_operator_builds_the_trigger() -> None:
    before = time.time()
    trigger = VertexJobTrigger(job_name=NAME)
    assert before <= trigger.deferred_at <= time.time()
    # the triggerer rebuilds it from its kwargs: the time is the deferral's, not the rebuild's
    assert VertexJobTrigger(**trigger.serialize()[1]).deferred_at == trigger.deferred_at


def test_in_a_triggerer_an_early_event_waits_for_the_rest_of_the_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(base, "resume_race_possible", lambda: True)
    deferred_at = time.time() - (RESUME_HOLD_S - 0.3)
    event, at = first_event(EndsAtOnce(job_name=NAME, conn_id="c", deferred_at=deferred_at))
    assert event.payload["status"] == "success"
    assert at >= deferred_at + RESUME_HOLD_S


class EndsLater(JobWaitTrigger):
    """A wait whose event comes ``after`` seconds after it starts."""

    after = 1.0

    async def decide(self, job: Job) -> JobEvent | None:  # pragma: no cover - never polled
        return None

    async def _wait(self) -> AsyncIterator[TriggerEvent]:
        await asyncio.sleep(self.after)  # the job's run, as the trigger sees it
        yield TriggerEvent({"status": "success", "message": "ended", "job": None})  # type: ignore[no-untyped-call]


def test_in_a_triggerer_a_late_event_is_not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    # the hold counts from the trigger's start: an event after it is handed over at once
    monkeypatch.setattr(base, "resume_race_possible", lambda: True)
    monkeypatch.setattr(base, "RESUME_HOLD_S", 0.5)
    started = time.monotonic()
    event, _ = first_event(EndsLater(job_name=NAME, conn_id="c", deferred_at=time.time() - 7200))
    assert event.payload["message"] == "ended"
    assert time.monotonic() - started < EndsLater.after + 0.4


def test_outside_a_triggerer_nothing_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "RESUME_HOLD_S", 3600.0)
    event, _ = first_event(EndsAtOnce(job_name=NAME, conn_id="c", deferred_at=time.time()))
    assert event.payload["message"] == "ended"
