"""The types of the XCom values of the operators and sensors (``outputs`` builds them).

A module of its own, which only type checkers, the docs script (scripts/outputs_md.py, which writes
their key tables into docs/how-to/outputs.md) and the tests import: a DAG file that builds a task does
not pay for creating these classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from airflow_vertex_dist.jobs.trials import BestTrial, TrialCounts, TrialRow

__all__ = ["CostOutput", "JobErrorOutput", "JobLink", "JobOutput", "LadderStep", "RungOutput", "TuningOutput"]


class JobLink(TypedDict):
    """The value under ``vertex_job``: the job's resource name and its page."""

    name: str
    console_url: str


class JobErrorOutput(TypedDict):
    """A failed or cancelled job's error."""

    code: int
    message: str


class LadderStep(TypedDict):
    """A rung of a capacity ladder that was left: which, its job (``None``: Create was refused), why it
    was left (the failure class, and the reason in words) and how long the rung took, in seconds."""

    rung: int
    name: str
    region: str
    job: str | None
    outcome: str
    reason: str
    seconds: float


class RungOutput(TypedDict):
    """The rung of a capacity ladder the job ran on (``number`` of ``of``, 1-based), its region and
    strategy, its price per hour (``None``: unknown), and the rungs left before it, in order."""

    number: int
    of: int
    name: str
    region: str
    strategy: str | None
    usd_per_hour: float | None
    left: list[LadderStep]


class CostOutput(TypedDict):
    """The job's estimated cost: its price per hour from the machine catalog (``basis`` says how it was
    reckoned; ``None``: unknown), the hours it ran (``endTime`` - ``startTime``; for a tuning job the
    sum over its trials; ``None`` while it has not ended) and their product in USD."""

    usd_per_hour: float | None
    basis: str
    hours: float | None
    estimated_usd: float | None


class JobOutput(TypedDict):
    """The return value of a training task and of the sensors: ``id`` is the last segment of
    ``name``, ``kind`` is ``customJobs`` or ``hyperparameterTuningJobs``; the times are RFC 3339.
    ``rung`` is set by a task with a capacity ladder, ``cost`` by the training and tuning tasks
    (``None`` from the sensors)."""

    name: str
    id: str
    kind: str
    display_name: str | None
    state: str | None
    create_time: str | None
    start_time: str | None
    end_time: str | None
    console_url: str
    error: JobErrorOutput | None
    rung: RungOutput | None
    cost: CostOutput | None


class TuningOutput(JobOutput):
    """The return value of a tuning task (and of the trial sensor): the job output, plus the trials."""

    trial_counts: TrialCounts
    best_trial: BestTrial | None
    trials: list[TrialRow]
