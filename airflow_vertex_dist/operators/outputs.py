"""The XCom values of the operators and sensors: JSON only, small, stable keys, typed.

``JobLink`` (key ``vertex_job``, pushed as soon as the job is known), ``JobOutput`` (the
return value of a training task and of the sensors) and ``TuningOutput`` (a tuning task's: the
job output with ``TrialCounts``, the
``BestTrial`` and one
``TrialRow`` per trial). docs/how-to/outputs.md
shows their keys as tables written from these types (scripts/outputs_md.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from airflow_vertex_dist.links import LINK_XCOM_KEY

if TYPE_CHECKING:  # the trial types live with the trial rules, which a DAG file does not load
    from airflow_vertex_dist.triggers.conditions.trials import BestTrial, TrialCounts, TrialRow

__all__ = [
    "LINK_XCOM_KEY",
    "JobErrorOutput",
    "JobLink",
    "JobOutput",
    "TuningOutput",
    "job_output",
    "tuning_output",
]


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


def _kind(name: str) -> str:
    parts = name.split("/")
    return parts[-2] if len(parts) >= 2 else ""


def job_output(job: Mapping[str, Any], console_url: str) -> JobOutput:
    name = str(job.get("name", ""))
    error = job.get("error")
    return {
        "name": name,
        "id": name.rsplit("/", 1)[-1],
        "kind": _kind(name),
        "display_name": job.get("displayName"),
        "state": job.get("state"),
        "create_time": job.get("createTime"),
        "start_time": job.get("startTime"),
        "end_time": job.get("endTime"),
        "console_url": console_url,
        "error": (
            {"code": int(error.get("code", 0)), "message": str(error.get("message", ""))}
            if isinstance(error, dict) and error
            else None
        ),
    }


def tuning_output(job: Mapping[str, Any], console_url: str) -> TuningOutput:
    from airflow_vertex_dist.triggers.conditions.trials import trial_summary  # not needed at parse time

    summary = trial_summary(job)
    counts: TrialCounts = {
        "total": summary["total"],
        "done": summary["done"],
        "succeeded": summary["succeeded"],
        "infeasible": summary["infeasible"],
        "active": summary["active"],
    }
    return {
        **job_output(job, console_url),
        "trial_counts": counts,
        "best_trial": summary["best"],
        "trials": summary["trials"],
    }
