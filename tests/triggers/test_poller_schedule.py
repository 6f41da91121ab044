"""How often the shared poller looks: as often as the call budget (N / 100 + 2 calls per poll interval,
N jobs waiting) allows, at most four times an interval, never less than once an interval."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_vertex_dist.triggers import poller
from airflow_vertex_dist.triggers.jobs import VertexJobTrigger
from vertex_emulator.app import Emulator

from .test_poller import delta, eventually, first_event, insert_jobs


def _poller_with(n_jobs: int, interval: float, last_calls: int) -> poller.JobPoller:
    key = poller.PollerKey("vertex_dist_default", "p", "us-central1", "customJobs")
    shared = poller.JobPoller(key)  # builds its hook object only: no call is made
    # waiters registered without starting the loop (``subscribe`` would start polling)
    shared._subs = {f"job-{i}": {poller._Subscription(shared, f"job-{i}", interval)} for i in range(n_jobs)}
    shared.last_cycle_calls = last_calls
    return shared


@pytest.mark.parametrize(
    ("n_jobs", "last_calls", "expected"),
    [
        (10, 1, 10 / 2.1),  # one page: 2.1 calls an interval allow 2.1 cycles
        (100, 1, 10 / 3.0),  # one page of up to 1,000 jobs: 3 cycles an interval
        (101, 2, 10 * 2 / 3.01),  # two pages (a service that returns 100 a page)
        (1000, 1, 10 / 4),  # the budget would allow 12 cycles: capped at 4 an interval
        (1000, 11, 10 * 11 / 12),  # 11 pages of 100: 12 calls an interval allow 1.09 cycles
        (50, 40, 10.0),  # many Gets (jobs ending at once): over budget, so once an interval, not less
    ],
)
async def test_the_period_spends_the_budget_and_never_exceeds_the_interval(
    n_jobs: int, last_calls: int, expected: float
) -> None:
    shared = _poller_with(n_jobs, 10.0, last_calls)
    try:
        assert shared.period() == pytest.approx(expected)
        budget = 2 + n_jobs / 100
        assert last_calls * 10.0 / shared.period() <= max(budget, last_calls) + 1e-9
    finally:
        await shared.hook.close()


async def test_calls_at_the_emulator_stay_within_the_budget_while_polling_faster_than_the_interval(
    em: Emulator,
) -> None:
    parent = "projects/poller-schedule/locations/us-central1"
    names = insert_jobs(em, parent, 10)
    tasks: list[asyncio.Task[Any]] = [
        asyncio.create_task(first_event(VertexJobTrigger(job_name=name, poll_interval=1.0))) for name in names
    ]
    try:
        await eventually(lambda: len(poller.active_pollers()) == 1)
        (shared,) = poller.active_pollers()
        await eventually(lambda: len(shared._known) == 10)
        await shared.next_cycle()
        # steady: one List page a cycle, so a cycle every 1 / 2.1 intervals
        assert shared.last_cycle_calls == 1
        assert shared.period() == pytest.approx(1.0 / 2.1)
        loop = asyncio.get_running_loop()
        before, start = em.call_counts(), loop.time()
        for _ in range(6):
            await shared.next_cycle()
        calls = sum(delta(em.call_counts(), before).values())
        elapsed = loop.time() - start
        assert calls == 6  # one List a cycle, no Get
        # within the budget: 2.1 calls per interval over the time it took (plus the cycle in flight)
        assert calls <= 2.1 * elapsed / 1.0 + 1, (calls, elapsed)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
