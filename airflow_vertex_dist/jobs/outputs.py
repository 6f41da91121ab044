"""The XCom values of the operators and sensors: JSON only, small, stable keys, typed.

``JobLink`` (key ``vertex_job``, pushed as soon as the job is known), ``JobOutput`` (the return
value of a training task and of the sensors) and ``TuningOutput`` (a tuning task's: the job output
with ``TrialCounts``, the ``BestTrial`` and one ``TrialRow`` per trial) are the ``TypedDict``s of
``output_types``; docs/how-to/outputs.md shows their keys as tables written from them
(scripts/outputs_md.py). ``job_cost`` estimates what a job cost from its price per hour and its times;
``ledger`` is the task's cost ledger (``jobs.ledger.task_ledger``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types only: a DAG file that builds a task creates none of these classes
    from airflow_vertex_dist.jobs.output_types import (
        CostOutput,
        JobOutput,
        RungOutput,
        TaskLedger,
        TuningOutput,
    )
    from airflow_vertex_dist.jobs.trials import TrialCounts

__all__ = ["LINK_XCOM_KEY", "job_cost", "job_output", "tuning_output"]

#: The XCom key of ``{"name", "console_url"}``, the job link a task pushes as soon as its job is known
#: (``airflow_vertex_dist.links`` reads it back for the extra link).
LINK_XCOM_KEY = "vertex_job"


def _kind(name: str) -> str:
    parts = name.split("/")
    return parts[-2] if len(parts) >= 2 else ""


def _hours(item: Mapping[str, Any]) -> float | None:
    """``endTime - startTime`` in hours; 0 for an item that ended without starting; ``None`` before it
    ended."""
    from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos

    end, start = item.get("endTime"), item.get("startTime")
    if not end:
        return None
    if not start:
        return 0.0
    try:
        return max(0, rfc3339_nanos(str(end)) - rfc3339_nanos(str(start))) / 3.6e12
    except ValueError:
        return None


def job_cost(job: Mapping[str, Any], usd_per_hour: float | None, basis: str) -> CostOutput:
    """The estimated cost of an ended ``job``: ``usd_per_hour`` (the whole job's price while it runs) times
    the hours it ran. For a tuning job (``trials`` in the job) ``usd_per_hour`` is the price of its
    ``parallelTrialCount`` trials at once, and the hours are each trial's, summed, at the price of one."""
    trials = job.get("trials")
    hours: float | None
    price = usd_per_hour
    if isinstance(trials, list) and job.get("parallelTrialCount"):
        each = [_hours(t) for t in trials if isinstance(t, Mapping)]
        hours = (
            None if not job.get("endTime") or any(h is None for h in each) else sum(h or 0.0 for h in each)
        )
        if price is not None:
            price = price / max(1, int(job["parallelTrialCount"]))
    else:
        hours = _hours(job)
    estimated = None if price is None or hours is None else round(price * hours, 8)
    rounded = None if hours is None else round(hours, 9)
    return {"usd_per_hour": usd_per_hour, "basis": basis, "hours": rounded, "estimated_usd": estimated}


def job_output(
    job: Mapping[str, Any],
    console_url: str,
    *,
    rung: RungOutput | None = None,
    cost: CostOutput | None = None,
    ledger: TaskLedger | None = None,
) -> JobOutput:
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
        "rung": rung,
        "cost": cost,
        "ledger": ledger,
    }


def tuning_output(
    job: Mapping[str, Any],
    console_url: str,
    *,
    rung: RungOutput | None = None,
    cost: CostOutput | None = None,
    ledger: TaskLedger | None = None,
) -> TuningOutput:
    from airflow_vertex_dist.jobs.trials import trial_summary  # not needed at parse time

    summary = trial_summary(job)
    counts: TrialCounts = {
        "total": summary["total"],
        "done": summary["done"],
        "succeeded": summary["succeeded"],
        "infeasible": summary["infeasible"],
        "active": summary["active"],
    }
    return {
        **job_output(job, console_url, rung=rung, cost=cost, ledger=ledger),
        "trial_counts": counts,
        "best_trial": summary["best"],
        "trials": summary["trials"],
    }
