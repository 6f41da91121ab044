"""The types of the XCom values of the operators and sensors (``outputs`` builds them).

A module of its own, which only type checkers, the docs script (scripts/outputs_md.py, which writes
their key tables into docs/how-to/outputs.md) and the tests import: a DAG file that builds a task does
not pay for creating these classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from airflow_vertex_dist.triggers.conditions.trials import BestTrial, TrialCounts, TrialRow

__all__ = ["JobErrorOutput", "JobLink", "JobOutput", "TuningOutput"]


class JobLink(TypedDict):
    """The value under ``vertex_job``: the job's resource name and its page."""

    name: str
    console_url: str


class JobErrorOutput(TypedDict):
    """A failed or cancelled job's error."""

    code: int
    message: str


class JobOutput(TypedDict):
    """The return value of a training task and of the sensors: ``id`` is the last segment of
    ``name``, ``kind`` is ``customJobs`` or ``hyperparameterTuningJobs``; the times are RFC 3339."""

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


class TuningOutput(JobOutput):
    """The return value of a tuning task (and of the trial sensor): the job output, plus the trials."""

    trial_counts: TrialCounts
    best_trial: BestTrial | None
    trials: list[TrialRow]
