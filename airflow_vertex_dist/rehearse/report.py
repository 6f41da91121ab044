"""A rehearsal's report, from what it recorded (pure: no I/O).

Per run (logical date): its state and tasks, the rungs each task tried and why it left them (the
ladder's own record, in the task's return value or, for a task that failed, its walk's XCom), the jobs
it created (found by their ``airflow-run`` label: one per task instance), their cost ledger by rung
(``jobs.ledger``: GPU-hours, catalog dollars, time queued and run; a job's entry is the task's own,
from its XCom ``ledger``, when it has one: the preemptions it read from the job's log and the time they
cost since the trainer's last checkpoint), and the time to a trained model:
from the run's first job's ``createTime`` to the ``endTime`` of its last job that succeeded. Over the
night: the most GPUs asked for at once per region and accelerator -- a job asks for its GPUs from its
Create to its end, whether it runs or waits QUEUED for quota or PENDING for capacity -- beside the
quota in force at that moment (sampled from the emulator while the runs ran) and the most GPUs of that
quota in use at once, as the emulator's own books counted them (a job waiting QUEUED for quota holds
none of it). Every time is on the service's clock, as seconds from the start of the night (the
scenario's time 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos

__all__ = ["build_report", "failures", "peak_gpus"]


def _offset(value: Any, start_ns: int) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return round((rfc3339_nanos(value) - start_ns) / 1e9, 3)
    except ValueError:
        return None


def _rung_names(task: Mapping[str, Any]) -> dict[int, str]:
    """Rung number -> name, from the task's return value (``rung``) or its ladder walk's XCom."""
    xcom = task.get("xcom") or {}
    value, walk = xcom.get("return_value"), xcom.get("vertex_ladder")
    names: dict[int, str] = {}
    rung = value.get("rung") if isinstance(value, Mapping) else None
    steps = list((rung or {}).get("left") or []) + list((walk or {}).get("steps") or [])
    for step in steps:
        if isinstance(step, Mapping) and isinstance(step.get("rung"), int):
            names[step["rung"]] = str(step.get("name") or step["rung"])
    for item in (rung, (walk or {}).get("rung")):
        if isinstance(item, Mapping) and isinstance(item.get("number"), int):
            names[item["number"]] = str(item.get("name") or item["number"])
    return names


def _rungs_tried(task: Mapping[str, Any]) -> list[dict[str, Any]]:
    xcom = task.get("xcom") or {}
    value, walk = xcom.get("return_value"), xcom.get("vertex_ladder")
    rung = value.get("rung") if isinstance(value, Mapping) else None
    steps = (rung or {}).get("left") if rung else (walk or {}).get("steps")
    tried = [
        {
            "task": task["task_id"],
            "rung": s.get("name"),
            "outcome": s.get("outcome"),
            "reason": s.get("reason"),
            "seconds": s.get("seconds"),
        }
        for s in steps or []
        if isinstance(s, Mapping)
    ]
    if rung:
        tried.append(
            {
                "task": task["task_id"],
                "rung": rung.get("name"),
                "outcome": "ran",
                "reason": None,
                "seconds": None,
            }
        )
    return tried


def _task_entries(task: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The task's own ledger entries (its XCom ``ledger``), by job name."""
    value = (task.get("xcom") or {}).get("return_value")
    ledger = value.get("ledger") if isinstance(value, Mapping) else None
    jobs = ledger.get("jobs") if isinstance(ledger, Mapping) else None
    return {str(e.get("job")): e for e in jobs or [] if isinstance(e, Mapping)}


def _job_row(
    job: Mapping[str, Any],
    task_id: str,
    rung: str | None,
    start_ns: int,
    task_entry: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    from airflow_vertex_dist.jobs.ledger import ledger_entry

    entry = dict(ledger_entry(job, rung))
    if task_entry is not None and task_entry.get("preemption_basis") != "the job was not read":
        keys = ("preempted_seconds", "preemptions", "preemption_basis")
        entry.update({k: task_entry[k] for k in keys if k in task_entry})
    error = job.get("error") if isinstance(job.get("error"), Mapping) else None
    return {
        "task": task_id,
        "created_s": _offset(job.get("createTime"), start_ns),
        "started_s": _offset(job.get("startTime"), start_ns),
        "ended_s": _offset(job.get("endTime"), start_ns),
        "error": (error or {}).get("message") or None,
        **entry,
    }


def _run_report(
    run: Mapping[str, Any], by_label: Mapping[str, list[Mapping[str, Any]]], start_ns: int
) -> dict[str, Any]:
    from airflow_vertex_dist.hooks.labels import rung_of
    from airflow_vertex_dist.jobs.ledger import by_rung, ledger_totals

    rows: list[dict[str, Any]] = []
    tried: list[dict[str, Any]] = []
    for task in run["tasks"]:
        names = _rung_names(task)
        tried += _rungs_tried(task)
        own = _task_entries(task)
        for job in by_label.get(task["run_label"], []):
            number = rung_of(job.get("labels"))
            rung = names.get(number, f"r{number}") if number else None
            rows.append(_job_row(job, task["task_id"], rung, start_ns, own.get(str(job.get("name")))))
    succeeded = [
        r["ended_s"] for r in rows if r["state"] == "JOB_STATE_SUCCEEDED" and r["ended_s"] is not None
    ]
    created = [r["created_s"] for r in rows if r["created_s"] is not None]
    to_model = round(max(succeeded) - min(created), 3) if succeeded and created else None
    return {
        "logical_date": run["logical_date"],
        "run_id": run["run_id"],
        "state": run["state"],
        "tasks": {
            t["task_id"] if t["map_index"] < 0 else f"{t['task_id']}[{t['map_index']}]": t["state"]
            for t in run["tasks"]
        },
        "rungs_tried": tried,
        "jobs": rows,
        "by_rung": by_rung(rows),  # type: ignore[arg-type]
        "totals": ledger_totals(rows),  # type: ignore[arg-type]
        "seconds_to_model": to_model,
    }


def _quota_at(
    samples: Sequence[Mapping[str, Any]], when_ns: int, region: str, accel: str, spot: bool
) -> int | None:
    key = "preemptible_quota" if spot else "quota"
    before = [s for s in samples if s["now_ns"] <= when_ns] or list(samples[:1])
    if not before:
        return None
    value = ((before[-1].get(key) or {}).get(region) or {}).get(accel)
    return int(value) if isinstance(value, int) else None


def peak_gpus(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The most GPUs asked for at once per (region, accelerator, quota kind), and when (seconds of the
    night): a job asks for ``accelerators`` from its Create to its end (to the last row's time, unended)."""
    events: dict[tuple[str, str, bool], list[tuple[float, int]]] = {}
    for row in rows:
        accel, count, created = (
            row.get("accelerator_type"),
            int(row.get("accelerators") or 0),
            row.get("created_s"),
        )
        if not accel or not count or created is None:
            continue
        key = (str(row["region"]), str(accel), row.get("strategy") in ("SPOT", "FLEX_START"))
        ended = row.get("ended_s")
        events.setdefault(key, []).append((created, count))
        if ended is not None:
            events[key].append((ended, -count))
    peaks = []
    for (region, accel, spot), changes in sorted(events.items()):
        held = most = 0
        at = 0.0
        for when, delta in sorted(changes, key=lambda c: (c[0], c[1])):  # an end before a Create at one time
            held += delta
            if held > most:
                most, at = held, when
        peaks.append({"region": region, "accelerator": accel, "preemptible": spot, "gpus": most, "at_s": at})
    return peaks


def _quota_in_use(books: Sequence[Mapping[str, Any]], peak: Mapping[str, Any]) -> int | None:
    """The most GPUs of ``peak``'s quota in use at once by the emulator's books (``/emulator/stats``'s
    ``gpus.quota`` rows, one per region, accelerator and quota metric), or None when they hold no row."""
    for row in books:
        preemptible = "_preemptible_" in str(row.get("metric", ""))
        if (row.get("region"), row.get("accelerator"), preemptible) == (
            peak["region"],
            peak["accelerator"],
            peak["preemptible"],
        ):
            return int(row["peak"])
    return None


def build_report(
    *,
    runs: Sequence[Mapping[str, Any]],
    jobs: Sequence[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    night_start_ns: int,
    scenario: Mapping[str, Any],
    real_seconds: float,
    api: Mapping[str, Any] | None = None,
    problems: Sequence[str] = (),
    quota_books: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The report (JSON): ``scenario``, ``runs`` (``_run_report`` each), ``peaks``, ``totals``, ``api``
    (the emulator's calls by method and the faults it injected, from ``/emulator/stats``) and
    ``problems`` (what went wrong with the Airflow processes: a timeout, an exit status). Each peak
    holds ``gpus`` (asked for at once), ``quota`` (in force then) and ``quota_in_use`` (the most in
    use at once by ``quota_books``, the emulator's quota rows at the end of the night)."""
    from airflow_vertex_dist.jobs.dicts import job_labels
    from airflow_vertex_dist.jobs.ledger import ledger_totals

    by_label: dict[str, list[Mapping[str, Any]]] = {}
    for job in jobs:
        by_label.setdefault(job_labels(job).get("airflow-run", ""), []).append(job)
    reports = [_run_report(run, by_label, night_start_ns) for run in runs]
    rows = [row for report in reports for row in report["jobs"]]
    peaks = peak_gpus(rows)
    for peak in peaks:
        when = night_start_ns + round(peak["at_s"] * 1e9)
        peak["quota"] = _quota_at(samples, when, peak["region"], peak["accelerator"], peak["preemptible"])
        peak["quota_in_use"] = _quota_in_use(quota_books, peak)
    ended = [r["ended_s"] for r in rows if r["ended_s"] is not None]
    return {
        "scenario": dict(scenario),
        "real_seconds": round(real_seconds, 1),
        "night_seconds": max(ended, default=0.0),
        "runs": reports,
        "peaks": peaks,
        "totals": ledger_totals(rows),
        "api": dict(api or {}),
        "problems": list(problems),
        "jobs_outside_runs": sum(
            len(v) for k, v in by_label.items() if k not in {t["run_label"] for r in runs for t in r["tasks"]}
        ),
    }


def _why(run: Mapping[str, Any]) -> str:
    if run["state"] == "not run":
        return "not run"
    bad = [f"{task} {state}" for task, state in run["tasks"].items() if state != "success"]
    errors = [f"job {j['job'].rsplit('/', 1)[-1]}: {j['error']}" for j in run["jobs"] if j.get("error")]
    return "; ".join([f"{run['state']} ({', '.join(bad) or 'no task failed'})", *errors[-1:]])


def failures(report: Mapping[str, Any]) -> list[str]:
    """Why a rehearsal did not succeed, one line each: every run that did not (its state, the tasks that
    did not succeed, the last job error it met) and every problem of the Airflow processes."""
    runs = report["runs"]
    lines = [f"{r['logical_date']}: {_why(r)}" for r in runs if r["state"] != "success"]
    if not runs:
        lines.append("no run was made")
    return lines + list(report.get("problems") or [])
