"""The two kinds of job the package drives and the job states the service reports, defined once for
the whole provider (the emulator, a distribution of its own, has its own).

A kind is the collection in a job's resource name: ``projects/P/locations/L/<kind>/<id>``.
States are the v1 ``JobState`` names as the JSON form spells them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = [
    "ACTIVE_STATES",
    "CUSTOM_JOBS",
    "JOB_KINDS",
    "TERMINAL_STATES",
    "TUNING_JOBS",
    "JobKind",
    "ever_ran",
]

JobKind = Literal["customJobs", "hyperparameterTuningJobs"]
CUSTOM_JOBS: JobKind = "customJobs"
TUNING_JOBS: JobKind = "hyperparameterTuningJobs"
JOB_KINDS: tuple[JobKind, ...] = (CUSTOM_JOBS, TUNING_JOBS)

#: Every state a job has not ended in. PAUSED is one: not terminal, though it does not progress by itself.
ACTIVE_STATES = frozenset(
    {
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_CANCELLING",
        "JOB_STATE_PAUSED",
        "JOB_STATE_UPDATING",
    }
)
#: The states a job ends in.
TERMINAL_STATES = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
    }
)


def ever_ran(job: Mapping[str, Any]) -> bool:
    """Whether ``job`` (its JSON form) ever entered RUNNING: it has a ``startTime``, which the service
    sets then ("Time when the CustomJob for the first time entered the JOB_STATE_RUNNING state", v1
    CustomJob.start_time; the same for a HyperparameterTuningJob). Replicas write their lines only
    while a job runs, so a job that ended before (refused capacity or quota while QUEUED or PENDING, a
    cancel while waiting) has no replica line left to settle: its log stream ends at once."""
    return bool(job.get("startTime"))
