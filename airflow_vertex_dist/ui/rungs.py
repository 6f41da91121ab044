"""A capacity ladder's rungs as the job view's table shows them: each rung the task tried, in order
(the rungs it left, then the one its job runs or ran on), with its job, how it ended, how long it took
and its price per hour from the provider's machine catalog. The rungs left come from the task's XComs:
its return value's ``rung.left`` once it ended, the walk's state (``vertex_ladder``) while it waits;
every rung is named as the ladder names it, the one its job runs on too (``rung_names``: the return
value's ``rung``, or the walk's while it waits deferred). Pure, but for ``ladder_steps`` and
``ladder_walk`` (the XComs, read through ``_compat``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from airflow_vertex_dist.jobs.dicts import job_labels, job_state, short_state
from airflow_vertex_dist.ui import model, times

UTC = timezone.utc

__all__ = ["job_price", "ladder_steps", "ladder_walk", "rung_names", "rung_rows", "same_task", "steps_of"]

#: the XCom key of a ladder's walk while its task waits (operators/ladder_wait.py's LADDER_XCOM_KEY)
_LADDER_KEY = "vertex_ladder"


def steps_of(result: Any, walk: Any) -> list[dict[str, Any]]:
    """The rungs left, from the task's return value (``rung.left``) or else the walk's state."""
    rung = result.get("rung") if isinstance(result, Mapping) else None
    if isinstance(rung, Mapping) and isinstance(rung.get("left"), list):
        return [dict(s) for s in rung["left"] if isinstance(s, Mapping)]
    steps = walk.get("steps") if isinstance(walk, Mapping) else None
    return [dict(s) for s in steps or [] if isinstance(s, Mapping)]


def rung_names(result: Any, walk: Any) -> dict[int, str]:
    """The rungs' names by number: each rung left (``steps_of``), and the rung the job runs or ran on
    (the return value's ``rung``, else the walk state's, pushed when the task defers)."""
    names: dict[int, str] = {}
    for source in (walk, result):  # the return value, written last, wins
        rung = source.get("rung") if isinstance(source, Mapping) else None
        if isinstance(rung, Mapping) and isinstance(rung.get("number"), int) and rung.get("name"):
            names[rung["number"]] = str(rung["name"])
    for step in steps_of(result, walk):
        if isinstance(step.get("rung"), int) and step.get("name"):
            names.setdefault(step["rung"], str(step["name"]))
    return names


def ladder_walk(
    dag_id: str, run_id: str, task_id: str, map_index: int
) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The rungs the task instance left and every rung's name it knows (``rung_names``), read from its
    XComs (none for a task without a ladder)."""
    from airflow_vertex_dist._compat import xcom_rows

    def one(key: str) -> Any:
        rows = xcom_rows(key, dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=map_index, limit=1)
        return rows[0]["value"] if rows else None

    result, walk = one("return_value"), one(_LADDER_KEY)
    return steps_of(result, walk), rung_names(result, walk)


def ladder_steps(dag_id: str, run_id: str, task_id: str, map_index: int) -> list[dict[str, Any]]:
    """The rungs the task instance left, read from its XComs (none for a task without a ladder)."""
    return ladder_walk(dag_id, run_id, task_id, map_index)[0]


def same_task(job: Mapping[str, Any], other: Mapping[str, Any] | None) -> bool:
    """Whether ``other`` is a job of the same task try's walk as ``job``: the same DAG, task and run
    labels (the rungs' job names come from XComs, which any task of the DAG may write: a job of
    another task is never shown through this one)."""
    from airflow_vertex_dist.hooks.labels import DAG_LABEL, RUN_LABEL, TASK_LABEL

    if not other:
        return False
    mine, theirs = job_labels(job), job_labels(other)
    return all(mine.get(k) and mine.get(k) == theirs.get(k) for k in (DAG_LABEL, TASK_LABEL, RUN_LABEL))


def _region(name: str) -> str:
    parts = name.split("/")
    return parts[3] if len(parts) > 3 and parts[2] == "locations" else ""


def job_price(job: Mapping[str, Any]) -> str:
    """USD per hour of the whole job while it runs (``jobs.ledger.job_usd_per_hour``: every replica of
    every pool, a tuning job's ``parallelTrialCount`` trials at once), as the table shows it: ``at
    most`` for SPOT (the catalog has no Spot price; a Spot VM is sold below on-demand); ``""`` when a
    figure is missing."""
    from airflow_vertex_dist.jobs.ledger import AT_MOST, job_usd_per_hour

    total, basis = job_usd_per_hour(job)
    if total is None:
        return ""
    return f"{'at most ' if basis == AT_MOST else ''}${total:,.2f}/h"


def _row(
    rung: str, region: str, job: Mapping[str, Any] | None, name: str, outcome: str, took: str
) -> dict[str, str]:
    return {
        "rung": rung,
        "region": region,
        "job": name.rsplit("/", 1)[-1] if name else "none (Create refused)",
        "outcome": outcome,
        "took": took,
        "price": job_price(job) if job else "",
        "since": "",
    }


def _label(number: Any, name: str) -> str:
    return f"{number} ({name})" if name else str(number)


def _own(
    job: Mapping[str, Any], read: Callable[[str], Mapping[str, Any] | None], name: str
) -> Mapping[str, Any] | None:
    other = read(name) if name else None
    return other if other is not None and same_task(job, other) else None


def rung_rows(
    job: Mapping[str, Any],
    steps: Sequence[Mapping[str, Any]],
    read: Callable[[str], Mapping[str, Any] | None],
    now: datetime | None = None,
    names: Mapping[int, str] | None = None,
) -> list[dict[str, str]]:
    """One row per rung tried: the ``steps`` left (each job read with ``read``, for its price: only a
    job of the same task, ``same_task``), then the rung of ``job`` (its ``airflow-rung`` label), each
    labelled ``<number> (<name>)`` when its name is known (a step's own, or ``names``); ``[]`` for the
    job of no ladder."""
    from airflow_vertex_dist.hooks.labels import RUNG_LABEL

    label = str(job_labels(job).get(RUNG_LABEL) or "")
    if not label and not steps:
        return []
    rows = []
    for step in steps:
        name = str(step.get("job") or "")
        reason = str(step.get("reason") or "")
        outcome = f"left: {step.get('outcome', '')}" + (f" ({reason})" if reason else "")
        seconds = step.get("seconds")
        took = times.duration(float(seconds)) if isinstance(seconds, int | float) else ""
        label_of = _label(step.get("rung", ""), str(step.get("name") or ""))
        rows.append(_row(label_of, str(step.get("region") or ""), _own(job, read, name), name, outcome, took))
    running = model.is_running(job)
    end = (now or datetime.now(UTC)) if running else job.get("endTime")
    took = times.duration(times.seconds_between(job.get("createTime"), end))
    name = str(job.get("name", ""))
    number = label.removeprefix("r")
    named = (names or {}).get(int(number)) if number.isdigit() else None
    current = _row(_label(number, named or ""), _region(name), job, name, short_state(job_state(job)), took)
    current["since"] = times.shown(job.get("createTime"))["iso"] if running else ""
    rows.append(current)
    return rows
