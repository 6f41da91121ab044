"""The cost ledger as the job view shows it: a task's jobs (the rungs its ladder left, then its job) with
their GPU-hours, dollars, time queued, run and lost to preemption, the totals by rung and the task's; and
in the jobs list, the totals of each DAG run whose jobs it lists.

A task that ended returned its ledger (the ``ledger`` of its XCom value: preemptions read from the
jobs' logs); while it runs the ledger is reckoned here from the jobs as read (``jobs.ledger``, no log
read: a Spot job's time lost to preemption shows as unknown). Pure, but for ``returned_ledger`` (the
task's XCom, read through ``_compat``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist.hooks.labels import rung_of
from airflow_vertex_dist.jobs.dicts import job_labels
from airflow_vertex_dist.jobs.ledger import AT_MOST, ledger_entry, ledger_totals, task_ledger
from airflow_vertex_dist.ui import times
from airflow_vertex_dist.ui.rungs import same_task

if TYPE_CHECKING:
    from airflow_vertex_dist.jobs.output_types import LedgerEntry, LedgerTotals, TaskLedger

__all__ = ["ledger_of", "ledger_view", "returned_ledger", "run_totals", "totals_row"]


def returned_ledger(dag_id: str, run_id: str, task_id: str, map_index: int) -> Any:
    """The ``ledger`` of the task instance's return value, or ``None`` (not ended, or no ledger)."""
    from airflow_vertex_dist._compat import xcom_rows

    rows = xcom_rows(
        "return_value", dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=map_index, limit=1
    )
    value = rows[0]["value"] if rows else None
    return value.get("ledger") if isinstance(value, Mapping) else None


def _valid(ledger: Any, job: Mapping[str, Any]) -> bool:
    """A returned ledger is shown only when it ends with ``job`` (an XCom any task may write)."""
    jobs = ledger.get("jobs") if isinstance(ledger, Mapping) else None
    return (
        bool(jobs)
        and isinstance(jobs, list)
        and isinstance(jobs[-1], Mapping)
        and (jobs[-1].get("job") == job.get("name"))
    )


def ledger_of(
    returned: Any,
    job: Mapping[str, Any],
    steps: Sequence[Mapping[str, Any]],
    read: Callable[[str], Mapping[str, Any] | None],
    names: Mapping[int, str] | None = None,
) -> TaskLedger:
    """The task's ledger: the one it returned (when it ends with ``job``), else reckoned from the jobs:
    each rung left (its job read with ``read``, and used only when it is a job of the same task,
    ``rungs.same_task``; else shown by name, its figures unknown) and then ``job``."""
    if _valid(returned, job):
        return returned  # type: ignore[no-any-return]
    entries: list[LedgerEntry] = []
    for step in steps:
        name = str(step.get("job") or "")
        if name:
            other = read(name)
            other = other if other is not None and same_task(job, other) else None  # another task's: unread
            entries.append(ledger_entry(other or {"name": name}, str(step.get("name") or "") or None))
    number = rung_of(job_labels(job))  # the rung the job runs on: its label, named as the ladder names it
    rung = ((names or {}).get(number) or f"rung {number}") if number is not None else None
    entries.append(ledger_entry(job, rung))
    return task_ledger(entries)


def _usd(value: Any, basis: Any) -> str:
    if not isinstance(value, int | float):
        return "unknown"
    shown = f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.6f}"
    return f"at most {shown}" if str(basis).startswith("at most") else shown


def _hours(value: Any) -> str:
    return (
        f"{value:,.2f}"
        if isinstance(value, int | float) and (value >= 0.01 or value == 0)
        else (f"{value:.6f}" if isinstance(value, int | float) else "unknown")
    )


def _seconds(value: Any) -> str:
    return times.duration(float(value)) if isinstance(value, int | float) else "unknown"


def totals_row(totals: Mapping[str, Any]) -> dict[str, str]:
    """Totals as a table shows them (``unknown`` where a figure is)."""
    lost = _seconds(totals.get("preempted_seconds"))
    count = totals.get("preemptions")
    return {
        "jobs": str(totals.get("jobs", "")),
        "gpu_hours": _hours(totals.get("gpu_hours")),
        "usd": _usd(totals.get("usd"), totals.get("usd_basis")),
        "queued": _seconds(totals.get("queued_seconds")),
        "run": _seconds(totals.get("run_seconds")),
        "lost": f"{lost} ({count} preemptions)" if isinstance(count, int) and count else lost,
    }


def _job_row(entry: Mapping[str, Any]) -> dict[str, str]:
    accel = entry.get("accelerator_type")
    return {
        **totals_row({**entry, "jobs": 1}),
        "rung": str(entry.get("rung") or ""),
        "job": str(entry.get("job") or "").rsplit("/", 1)[-1],
        "strategy": str(entry.get("strategy") or ""),
        "gpus": f"{entry.get('accelerators', 0)} x {accel}" if accel else "none",
        "lost_basis": str(entry.get("preemption_basis") or ""),
        "usd_basis": str(entry.get("usd_basis") or ""),
    }


def ledger_view(ledger: Mapping[str, Any]) -> dict[str, Any]:
    """What the view's ledger section shows: a row per job, per rung (with a ladder) and the total."""
    rungs = [r for r in ledger.get("by_rung") or [] if isinstance(r, Mapping)]
    return {
        "jobs": [_job_row(e) for e in ledger.get("jobs") or [] if isinstance(e, Mapping)],
        "rungs": [{"rung": str(r.get("rung") or ""), **totals_row(r.get("totals") or {})} for r in rungs]
        if any(r.get("rung") for r in rungs)
        else [],
        "total": totals_row(ledger.get("totals") or {}),
        "at_most": any(
            isinstance(e, Mapping) and e.get("usd_basis") == AT_MOST for e in ledger.get("jobs") or []
        ),
    }


def run_totals(rows: Iterable[tuple[str, str, Sequence[LedgerEntry]]]) -> list[dict[str, str]]:
    """One row per DAG run, in the order first met: ``rows`` are ``(dag_id, run_id, entries)`` of each
    listed task; a job listed twice (a task and a sensor watching it) is counted once."""
    runs: dict[tuple[str, str], dict[str, LedgerEntry]] = {}
    for dag_id, run_id, entries in rows:
        jobs = runs.setdefault((dag_id, run_id), {})
        for entry in entries:
            jobs.setdefault(entry["job"], entry)
    out = []
    for (dag_id, run_id), jobs in runs.items():
        totals: LedgerTotals = ledger_totals(jobs.values())
        out.append({"dag_id": dag_id, "run_id": run_id, **totals_row(totals)})
    return out
