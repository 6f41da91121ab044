"""The rows of the "Vertex AI jobs" list: each task's job with its state, kind, display name and
duration (counting up while it runs), and for a capacity ladder the job of every rung the task left.
Pure: the app reads the jobs (``JobCache``) and the rungs left (``rungs.ladder_steps``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone, tzinfo
from typing import Any
from urllib.parse import quote

from airflow_vertex_dist.jobs.dicts import job_state, short_state
from airflow_vertex_dist.ui import model, times

UTC = timezone.utc

__all__ = ["KINDS", "list_row"]

#: a job's kind, by the collection its name is in
KINDS = {"customJobs": "custom job", "hyperparameterTuningJobs": "tuning job"}


def _rung_jobs(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    shown = []
    for step in steps:
        job = str(step.get("job") or "").rsplit("/", 1)[-1] or "no job (Create refused)"
        shown.append(f"rung {step.get('rung', '?')}: {job} (left: {step.get('outcome', '')})")
    return shown


def list_row(
    row: Mapping[str, Any],
    job: Mapping[str, Any] | None,
    steps: Sequence[Mapping[str, Any]] = (),
    *,
    zone: tzinfo = UTC,
    now: datetime | None = None,
) -> dict[str, Any]:
    """One row of the list from the task's ``vertex_job`` XCom row (``dag_id``, ``run_id``,
    ``task_id``, ``map_index``, ``timestamp``, ``job_name``), its job as read (None: not readable)
    and the rungs its ladder left."""
    name = str(row.get("job_name", ""))
    parts = name.split("/")
    job = job or {}
    running = bool(job) and model.is_running(job)
    end = (now or datetime.now(UTC)) if running else job.get("endTime")
    return {
        "path": "/".join(quote(str(row[k]), safe="") for k in ("dag_id", "run_id", "task_id", "map_index")),
        "job": name.rsplit("/", 1)[-1],
        "dag_id": row["dag_id"],
        "run_id": row["run_id"],
        "task": row["task_id"] if int(row["map_index"]) < 0 else f"{row['task_id']}[{row['map_index']}]",
        "timestamp": times.shown(row.get("timestamp"), zone),
        "state": short_state(job_state(job)) if job else "?",
        "kind": KINDS.get(parts[-2] if len(parts) > 1 else "", ""),
        "display_name": str(job.get("displayName") or ""),
        "duration": times.duration(times.seconds_between(job.get("createTime"), end)),
        "since": times.shown(job.get("createTime"))["iso"] if running else "",
        "rungs": _rung_jobs(steps),
    }
