"""Finding 7 of issue 37: clock skew between the worker and the triggerer stretched the resume hold.

The hold (``RESUME_HOLD_S``) was counted from ``deferred_at``, the worker's wall time, against the
triggerer's wall time: a worker 45 s ahead made a 10 s hold last 55 s, so a task whose job succeeded
could run past its ``execution_timeout``, and a worker behind dropped the hold altogether. Every limit
of a wait is now measured on the clock of the process that waits (``time.monotonic()``); a wall time
from another host only ever shortens a limit, never stretches it past its length.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from airflow.triggers.base import TriggerEvent
from stack.figures import Figures

from airflow_vertex_dist.jobs.events import JobEvent
from airflow_vertex_dist.jobs.types import Job
from airflow_vertex_dist.triggers import base
from airflow_vertex_dist.triggers.base import JobWaitTrigger
from airflow_vertex_dist.triggers.rung import VertexRungTrigger

NAME = "projects/p/locations/us-central1/customJobs/123"
SKEW_S = 45.0
HOLD_S = 1.0


class EndsAtOnce(JobWaitTrigger):
    """A wait whose job has already ended: its event is ready the moment it starts."""

    async def decide(self, job: Job) -> JobEvent | None:  # pragma: no cover - never polled
        return None

    async def _wait(self) -> AsyncIterator[TriggerEvent]:
        yield TriggerEvent({"status": "success", "message": "ended", "job": None})  # type: ignore[no-untyped-call]


def held_for(deferred_at: float) -> float:
    """Seconds from the trigger's start to its event, in a triggerer."""

    async def one() -> float:
        started = time.monotonic()
        await anext(EndsAtOnce(job_name=NAME, conn_id="c", deferred_at=deferred_at).run())
        return time.monotonic() - started

    return asyncio.run(asyncio.wait_for(one(), timeout=SKEW_S + 30))


@pytest.fixture
def in_a_triggerer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "resume_race_possible", lambda: True)
    monkeypatch.setattr(base, "RESUME_HOLD_S", HOLD_S)


@pytest.mark.usefixtures("in_a_triggerer")
def test_a_worker_clock_ahead_does_not_stretch_the_resume_hold() -> None:
    # the worker's clock is 45 s ahead of the triggerer's: the deferral looks 45 s in the future
    held = held_for(time.time() + SKEW_S)
    assert HOLD_S <= held < HOLD_S + 5
    Figures.record(
        "security_probes",
        "clock_skew_resume_hold",
        {
            "input": f"the worker's clock 45 s ahead of the triggerer's, a resume hold of {HOLD_S:.0f} s",
            "answer": f"the event after {held:.1f} s (was {HOLD_S + SKEW_S:.0f} s; 45 s behind, the hold was "
            "dropped)",
        },
    )


@pytest.mark.usefixtures("in_a_triggerer")
def test_a_worker_clock_behind_does_not_drop_the_resume_hold() -> None:
    # the worker's clock is 45 s behind: the deferral looks long past, yet the hold still holds
    assert HOLD_S <= held_for(time.time() - SKEW_S) < HOLD_S + 5


def test_a_job_created_on_a_skewed_clock_waits_no_longer_than_its_pending_limit() -> None:
    # the service stamped the job 45 s "in the future" of this host: the pending limit still counts
    # at most its own length from the start of the wait
    from airflow_vertex_dist.common.rfc3339 import format_rfc3339_nanos

    created = format_rfc3339_nanos(int((time.time() + SKEW_S) * 1e9))
    trigger = VertexRungTrigger(job_name=NAME, conn_id="c", pending_limit=10.0, job_created=created)
    started = time.monotonic()
    deadline = trigger.deadline(started)
    assert deadline is not None and deadline <= started + 10.0
