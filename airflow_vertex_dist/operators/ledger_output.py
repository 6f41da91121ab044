"""The cost ledger a training or tuning task returns (``ledger`` of its XCom value) and reports in its
OpenLineage job facet: one ``jobs.ledger`` entry per job of the try -- with a capacity ladder, the job of
every rung it left (read again, in its region, for its final times) and then the job it ran on -- its
totals by rung and the task's totals.

A SPOT or FLEX_START job that ran is preempted without leaving a trace in the job itself: its
preemptions are read from its ``service`` log lines in Cloud Logging (``jobs.ledger.preemption_times``),
with the task's own credentials. Each is logged with the time it cost (``operators.checkpoint_log``:
since the last checkpoint in the spec's checkpoint directory, read from Cloud Storage), and those
checkpoint times count in the ledger's ``preempted_seconds``. A job whose log could not be read has
``preempted_seconds`` ``None`` and says so in ``preemption_basis``; a job that could not be read again
is in the ledger by name, its figures ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from airflow_vertex_dist.jobs.dicts import parse_job_name
from airflow_vertex_dist.jobs.ledger import job_strategy, ledger_entry, preemption_times, task_ledger

if TYPE_CHECKING:
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
    from airflow_vertex_dist.jobs.output_types import LedgerEntry, TaskLedger
    from airflow_vertex_dist.operators.job_logs import JobLogs
    from airflow_vertex_dist.operators.ladder import LadderWalk

__all__ = ["LedgerHost", "job_preemptions", "task_ledger_of", "with_spec"]

#: the ``task_name`` of Vertex AI's own lines about a job in Cloud Logging
SERVICE_TASK = "service"


class LedgerHost(Protocol):
    """The operator as its ledger sees it: its hook, log, replica logs and ladder walk."""

    @property
    def hook(self) -> VertexJobsHook: ...
    @property
    def log(self) -> Any: ...
    @property
    def job_logs(self) -> JobLogs: ...
    @property
    def ladder_walk(self) -> LadderWalk | None: ...
    @property
    def vertex_dist_conn_id(self) -> str: ...
    @property
    def validated_spec(self) -> Any: ...
    def job_body(self) -> dict[str, Any]: ...


def job_preemptions(logs: JobLogs, job: Mapping[str, Any], log: Any) -> list[str] | None:
    """The times of ``job``'s preemptions, from its ``service`` log lines; ``None`` where none are
    read: a STANDARD job (never preempted), a tuning job, a job that did not run to an end, or a log
    that could not be read (a warning says why)."""
    if job_strategy(job) == "STANDARD" or "trialJobSpec" in job:
        return None
    if not job.get("startTime") or not job.get("endTime"):
        return None
    name = parse_job_name(str(job["name"]))
    try:
        hook = logs.logs_hook(name.project)
        try:
            lines = hook.read_lines([name.job_id], selection=[SERVICE_TASK])
        finally:
            hook.close()
    except Exception as exc:  # the ledger says the log was not read; the task goes on
        log.warning("Could not read the service log of %s for its preemptions: %s", job["name"], exc)
        return None
    return preemption_times(((line.timestamp, line.text) for line in lines), job)


def _entry(host: LedgerHost, job: Mapping[str, Any], rung: str | None) -> LedgerEntry:
    from airflow_vertex_dist.operators.checkpoint_log import log_preemptions

    preemptions = job_preemptions(host.job_logs, job, host.log)
    checkpoints = log_preemptions(host, host.validated_spec, job, preemptions) if preemptions else None
    return ledger_entry(job, rung, preemptions=preemptions, checkpoints=checkpoints)


def _left(host: LedgerHost, walk: LadderWalk) -> list[LedgerEntry]:
    """The entries of the jobs of the rungs the walk left, each read again in its region."""
    entries = []
    for step in walk.steps or []:
        name = step.get("job")
        if not name:
            continue  # the rung's Create was refused: no job
        try:
            left: Mapping[str, Any] = walk.region_hook(step["region"]).get_job(name)
        except Exception as exc:
            host.log.warning("Could not read %s again for the cost ledger: %s", name, exc)
            left = {"name": name}
        entries.append(_entry(host, left, step.get("name")))
    return entries


def with_spec(job: Mapping[str, Any], body: Mapping[str, Any]) -> Mapping[str, Any]:
    """``job`` with the spec of ``body`` (the request that created it) when it carries none: a trigger
    event's job is compact (``compact_job``: no ``jobSpec``), and the ledger prices the pools."""
    if job.get("jobSpec") or job.get("trialJobSpec"):
        return job
    spec = {k: body[k] for k in ("jobSpec", "trialJobSpec", "parallelTrialCount") if k in body}
    return {**spec, **job}


def task_ledger_of(host: LedgerHost, job: Mapping[str, Any]) -> TaskLedger:
    """The ledger of the try that ends with ``job``: the rungs' jobs it left, then ``job`` (its spec
    from the request body when the job as handed over is compact)."""
    walk = host.ladder_walk
    entries = _left(host, walk) if walk is not None else []
    rung = walk.rung_plan.name if walk is not None and walk.rung_plan is not None else None
    entries.append(_entry(host, with_spec(job, host.job_body()), rung))
    return task_ledger(entries)
