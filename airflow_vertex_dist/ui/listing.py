"""The rows of the "Vertex AI jobs" list: each task's job with its state, kind, display name and
duration (counting up while it runs), and for a capacity ladder the job of every rung the task left;
one row per job, naming every task that pushed it (a tuning task and the trial sensor that watches its
job: ``one_row_per_job``). Pure: the app reads the jobs (``JobCache``) and the rungs left
(``rungs.ladder_steps``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone, tzinfo
from typing import Any
from urllib.parse import quote

from airflow_vertex_dist.jobs.dicts import job_state, short_state
from airflow_vertex_dist.ui import model, times

UTC = timezone.utc

__all__ = ["KINDS", "list_row", "one_row_per_job"]

#: a job's kind, by the collection its name is in
KINDS = {"customJobs": "custom job", "hyperparameterTuningJobs": "tuning job"}


def _rung_jobs(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    shown = []
    for step in steps:
        job = str(step.get("job") or "").rsplit("/", 1)[-1] or "no job (Create refused)"
        shown.append(f"rung {step.get('rung', '?')}: {job} (left: {step.get('outcome', '')})")
    return shown


def one_row_per_job(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``vertex_job`` XCom rows merged by job name, in the order of their first row: each is the
    job's earliest-pushed row (the task that made or attached it first), with ``pushers`` the rows of
    every task that pushed it, earliest first."""
    by_job: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_job.setdefault(str(row.get("job_name", "")), []).append(row)
    merged = []
    for same in by_job.values():
        ordered = sorted(same, key=lambda r: str(r.get("timestamp") or ""))
        merged.append({**ordered[0], "pushers": ordered})
    return merged


def _path(row: Mapping[str, Any]) -> str:
    return "/".join(quote(str(row[k]), safe="") for k in ("dag_id", "run_id", "task_id", "map_index"))


def _task(row: Mapping[str, Any]) -> str:
    return str(row["task_id"]) if int(row["map_index"]) < 0 else f"{row['task_id']}[{row['map_index']}]"


def _pusher(row: Mapping[str, Any], first: Mapping[str, Any]) -> str:
    """A task that pushed the job, named with its DAG when it is not the first pusher's."""
    return _task(row) if row["dag_id"] == first["dag_id"] else f"{row['dag_id']}:{_task(row)}"


def list_row(
    row: Mapping[str, Any],
    job: Mapping[str, Any] | None,
    steps: Sequence[Mapping[str, Any]] = (),
    *,
    zone: tzinfo = UTC,
    now: datetime | None = None,
) -> dict[str, Any]:
    """One row of the list from the task's ``vertex_job`` XCom row (``dag_id``, ``run_id``,
    ``task_id``, ``map_index``, ``timestamp``, ``job_name``; ``pushers``: the rows of every task that
    pushed the job, ``one_row_per_job``), its job as read (None: not readable) and the rungs its ladder
    left. ``tasks``: each task that pushed the job, with the path of its view."""
    name = str(row.get("job_name", ""))
    parts = name.split("/")
    job = job or {}
    running = bool(job) and model.is_running(job)
    end = (now or datetime.now(UTC)) if running else job.get("endTime")
    return {
        "path": _path(row),
        "job": name.rsplit("/", 1)[-1],
        "dag_id": row["dag_id"],
        "run_id": row["run_id"],
        "task": _task(row),
        "tasks": [{"task": _pusher(r, row), "path": _path(r)} for r in row.get("pushers") or [row]],
        "timestamp": times.shown(row.get("timestamp"), zone),
        "state": short_state(job_state(job)) if job else "?",
        "kind": KINDS.get(parts[-2] if len(parts) > 1 else "", ""),
        "display_name": str(job.get("displayName") or ""),
        "duration": times.duration(times.seconds_between(job.get("createTime"), end)),
        "since": times.shown(job.get("createTime"))["iso"] if running else "",
        "rungs": _rung_jobs(steps),
    }
