"""The XCom values of the operators and sensors: JSON only, small, stable keys, typed.

``JobLink`` (key ``vertex_job``, pushed as soon as the job is known), ``JobOutput`` (the return
value of a training task and of the sensors) and ``TuningOutput`` (a tuning task's: the job output
with ``TrialCounts``, the ``BestTrial`` and one ``TrialRow`` per trial) are the ``TypedDict``s of
``output_types``; docs/how-to/outputs.md shows their keys as tables written from them
(scripts/outputs_md.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist.links import LINK_XCOM_KEY

if TYPE_CHECKING:  # types only: a DAG file that builds a task creates none of these classes
    from airflow_vertex_dist.operators.output_types import JobOutput, TuningOutput
    from airflow_vertex_dist.triggers.conditions.trials import TrialCounts

__all__ = ["LINK_XCOM_KEY", "job_output", "tuning_output"]


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
