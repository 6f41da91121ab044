"""The types of the XCom values of the operators and sensors (``outputs`` builds them).

A module of its own, which only type checkers, the docs script (scripts/outputs_md.py, which writes
their key tables into docs/how-to/outputs.md) and the tests import: a DAG file that builds a task does
not pay for creating these classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from airflow_vertex_dist.jobs.trials import BestTrial, TrialCounts, TrialRow

__all__ = [
    "CostOutput",
    "JobErrorOutput",
    "JobLink",
    "JobOutput",
    "LadderStep",
    "LedgerEntry",
    "LedgerTotals",
    "RungLedger",
    "RungOutput",
    "TaskLedger",
    "TuningOutput",
]


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


class LedgerEntry(TypedDict):
    """One job of the cost ledger (``jobs.ledger.ledger_entry``). ``rung``: the ladder's name of the
    rung it ran on (``None``: no ladder); ``dag``, ``task``, ``run``: its ``airflow-dag``,
    ``airflow-task`` and ``airflow-run`` labels, the keys a billing export is joined on;
    ``strategy``: ``STANDARD``, ``SPOT`` or ``FLEX_START``; ``accelerator_type``: the accelerators of
    its pools (several joined with ``+``; ``None``: none); ``accelerators`` and ``replicas``: of one
    run of the job (of one trial, for a tuning job); ``gpu_hours``: accelerators x hours run (a tuning
    job: summed over its trials); ``usd``: the catalog's price times those hours, ``usd_basis`` saying
    how it was reckoned (``at most`` for SPOT: the catalog has no Spot price; ``never ran``: 0 at
    any price; ``None``: unknown, the basis says why); ``queued_seconds``: ``createTime`` to
    ``startTime`` (to ``endTime`` for a job that never started); ``run_seconds``: ``startTime`` to
    ``endTime``; ``preempted_seconds``: the run that preemptions cut short, from each (re)start to the
    preemption that ended it, ``preemptions`` how many, ``preemption_basis`` where they were read
    (``None``: not known, the basis says why). Times of a job that has not ended: ``None``."""

    job: str
    kind: str
    state: str | None
    rung: str | None
    region: str
    dag: str | None
    task: str | None
    run: str | None
    strategy: str
    accelerator_type: str | None
    accelerators: int
    replicas: int
    gpu_hours: float | None
    usd: float | None
    usd_basis: str
    queued_seconds: float | None
    run_seconds: float | None
    preempted_seconds: float | None
    preemptions: int | None
    preemption_basis: str


class LedgerTotals(TypedDict):
    """Sums over ledger entries (``jobs.ledger.ledger_totals``): ``jobs`` counted; each sum ``None``
    when any entry's figure is unknown (never a partial sum); ``usd_basis`` is ``exact (on-demand)``,
    or ``at most`` when an entry is an upper bound."""

    jobs: int
    gpu_hours: float | None
    usd: float | None
    usd_basis: str
    queued_seconds: float | None
    run_seconds: float | None
    preempted_seconds: float | None
    preemptions: int | None


class RungLedger(TypedDict):
    """One rung's totals in a task's ledger (``None``: the jobs of no ladder)."""

    rung: str | None
    totals: LedgerTotals


class TaskLedger(TypedDict):
    """The cost ledger of a training or tuning task: every job the task created (the rungs it left
    too), in order, its totals by rung, and the task's totals."""

    jobs: list[LedgerEntry]
    by_rung: list[RungLedger]
    totals: LedgerTotals


class JobOutput(TypedDict):
    """The return value of a training task and of the sensors: ``id`` is the last segment of
    ``name``, ``kind`` is ``customJobs`` or ``hyperparameterTuningJobs``; the times are RFC 3339.
    ``rung`` is set by a task with a capacity ladder, ``cost`` and ``ledger`` (every job the task
    created, the rungs it left included) by the training and tuning tasks (``None`` from the
    sensors)."""

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
    ledger: TaskLedger | None


class TuningOutput(JobOutput):
    """The return value of a tuning task (and of the trial sensor): the job output, plus the trials."""

    trial_counts: TrialCounts
    best_trial: BestTrial | None
    trials: list[TrialRow]
