"""The schedule of the shared job poller (``triggers.poller``): how often its cycles start
(``cycle_period``, from the call budget) and what it remembers of each job to plan a cycle's calls
(``Known``, ``live_managed``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES

__all__ = [
    "BUDGET_BASE",
    "BUDGET_PER_JOB",
    "MAX_CYCLES_PER_INTERVAL",
    "SPACING_MARGIN",
    "Known",
    "cycle_period",
    "live_managed",
]

#: The call budget: with N jobs waiting, at most N / 100 + 2 calls per poll interval.
BUDGET_PER_JOB = 0.01
BUDGET_BASE = 2.0
#: At most this many cycles start within one poll interval, however much budget is left (CPU).
MAX_CYCLES_PER_INTERVAL = 4
#: Cycles ``k`` an interval start ``interval / k`` times this much apart: a window of one interval that
#: begins with a cycle's start ends just before the (k + 1)-th, so it never holds k + 1 of them.
SPACING_MARGIN = 0.01


def cycle_period(interval: float, waiting: int, last_cycle_calls: int) -> float:
    """Seconds from the start of one cycle to the start of the next, with ``waiting`` jobs waited on
    and the last cycle's cost (``JobPoller.period`` explains the schedule)."""
    budget = BUDGET_BASE + BUDGET_PER_JOB * waiting
    cycles = min(MAX_CYCLES_PER_INTERVAL, int(budget // max(1, last_cycle_calls)))
    if cycles <= 1:
        return interval
    return interval / cycles * (1.0 + SPACING_MARGIN)


@dataclass
class Known:
    """What the poller last saw of a job: whether it is ours (``managed-by``), its create time, its state."""

    managed: bool
    create_time: str
    state: str


def live_managed(known: Mapping[str, Known], names: Iterable[str]) -> list[Known]:
    """What is known of ``names`` that a cycle's List looks for: our jobs, not yet ended."""
    return [
        job
        for name in names
        if (job := known.get(name)) is not None and job.managed and job.state not in TERMINAL_STATES
    ]
