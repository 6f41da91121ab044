"""A ladder's try finding the task's jobs again, and ending them (the module doc of
``airflow_vertex_dist.operators.ladder`` tells the whole walk).

``survey`` reads the task's jobs on every rung and in every region (``ladder_jobs``) into where the walk
starts: the live or succeeded job of this retry budget to re-attach to, or the rung after the last one
left, with the rungs left so far (``history``); ``end_job`` cancels a job and waits until it ended, so
that at most one of the task's jobs is live at any moment; ``cancel_task_jobs`` cancels the task's
unfinished jobs on every rung.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist._compat import AirflowException, AirflowFailException
from airflow_vertex_dist.operators.ladder_parts import (
    LadderState,
    ladder_table,
    pending_limit_s,
    region_of,
    rung_seconds,
    strategy_of,
)

if TYPE_CHECKING:
    from airflow_vertex_dist.hooks.rung_jobs import LadderJobs, RungJob
    from airflow_vertex_dist.jobs.types import Job
    from airflow_vertex_dist.operators.wait_host import WaitHost
    from airflow_vertex_dist.specs.capacity import RungPlan

__all__ = ["CANCEL_WAIT_S", "Survey", "cancel_task_jobs", "end_job", "history", "survey"]

#: How long a rung's cancelled job may take to end before the task gives up rather than start another.
CANCEL_WAIT_S = 600.0

#: What ``survey`` found: ``(history, rung to start at, (rung, live job) or None)``.
Survey = tuple[LadderState, int, "tuple[int, Job] | None"]


def end_job(host: WaitHost, name: str, *, reason: str, wait_s: float = CANCEL_WAIT_S) -> None:
    """Cancel the job unless it ended, and wait until it has: the next rung's job is only created
    once this one is no longer live. A job still not ended after ``wait_s`` fails the task."""
    from airflow_vertex_dist.jobs.dicts import job_state, short_state
    from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES

    job = host.hook.get_job(name)
    if job_state(job) in TERMINAL_STATES:
        return
    if job_state(job) != "JOB_STATE_CANCELLING":
        host.log.warning("Cancelling %s (%s)", name, reason)
        try:
            host.hook.cancel_job(name)
        except Exception as exc:  # already being cancelled, or ended meanwhile: the wait below tells
            host.log.info("Cancel of %s answered %s", name, exc)
    job = host.hook.wait_until_ended(name, timeout_s=wait_s)
    state = job_state(job)
    if state not in TERMINAL_STATES:
        raise AirflowException(
            f"job {name} is still {short_state(state)} {wait_s:g}s after it was cancelled: not moving to "
            "another rung while it may run (a task has at most one live job)"
        )
    host.log.info("Job %s is %s", name, short_state(state))


def _cancel_earlier_budgets(host: WaitHost, found: LadderJobs) -> None:
    from airflow_vertex_dist.hooks.find_or_create import NO_CANCEL_STATES
    from airflow_vertex_dist.jobs.dicts import job_state, short_state

    for rung, job in found.earlier:
        if host.cancel_on_kill and job_state(job) not in NO_CANCEL_STATES:
            host.log.warning(
                "Cancelling %s (rung %d, %s): made by a try before the task was cleared, and a cleared "
                "task runs again",
                job["name"],
                rung,
                short_state(job_state(job)),
            )
            host.hook.cancel_job(str(job["name"]))


def survey(host: WaitHost, found: LadderJobs, plans: Sequence[RungPlan]) -> Survey:
    """This task's jobs on every rung (``found``): ``(history, rung to start at, (rung, live job) or
    None)``."""
    from airflow_vertex_dist.hooks.find_or_create import LIVE_STATES, JobAlreadyExistsError
    from airflow_vertex_dist.jobs.dicts import job_state, short_state

    _cancel_earlier_budgets(host, found)
    live = [entry for entry in found.mine if job_state(entry.job) in LIVE_STATES]
    if live:
        keep, *others = live
        for entry in others:  # concurrent copies of one try: keep the oldest, as find-or-create does
            end_job(host, str(entry.job["name"]), reason="a concurrent copy of this try's job")
        if host.if_exists == "fail":
            raise JobAlreadyExistsError(keep.job)
        if host.if_exists == "reattach":
            host.log.info(
                "Re-attaching to %s (%s) on rung %d, found by its labels",
                keep.job["name"],
                short_state(job_state(keep.job)),
                keep.rung,
            )
            return history(host, found.mine, plans, until=keep.job), keep.rung, (keep.rung, keep.job)
        end_job(host, str(keep.job["name"]), reason="if_exists='recreate'")
        return LadderState(), 1, None
    succeeded = [e for e in found.mine if job_state(e.job) == "JOB_STATE_SUCCEEDED"]
    if succeeded and host.if_exists == "reattach":
        last = succeeded[-1]
        host.log.info("Re-attaching to %s (SUCCEEDED) on rung %d", last.job["name"], last.rung)
        return history(host, found.mine, plans, until=last.job), last.rung, (last.rung, last.job)
    if succeeded and host.if_exists == "fail":
        raise JobAlreadyExistsError(succeeded[-1].job)
    if host.if_exists == "recreate":
        return LadderState(), 1, None
    state = history(host, found.mine, plans)
    if not found.mine:
        return state, 1, None
    start = _resume_at(found.mine[-1], plans, state)
    host.log.info(
        "Resuming the capacity ladder at rung %d; the rungs left so far:\n%s",
        start,
        ladder_table(state.steps),
    )
    return state, start, None


def _resume_at(last: RungJob, plans: Sequence[RungPlan], state: LadderState) -> int:
    """The rung to go on from after the last ended job of this budget (``last``): its own (a retry
    left) or the next; a failure no rung would avoid fails the task."""
    from airflow_vertex_dist.jobs.failures import classify_job

    plan = plans[last.rung - 1]
    failure = classify_job(last.job, strategy=strategy_of(plan), pending_limit_s=pending_limit_s(plan))
    if failure is not None and failure.fail_fast:
        raise AirflowFailException(
            f"{failure.kind} on rung {plan.number} ({plan.name}), job {last.job['name']} of an "
            f"earlier try: {failure.reason}. Not trying other rungs: this would fail on any of them"
        )
    if failure is not None and failure.capacity:
        used = sum(1 for s in state.steps if s["rung"] == last.rung)
        if plan.rung.action(failure.kind) != "retry" or used > plan.rung.retries:
            return last.rung + 1
    return last.rung


def history(
    host: WaitHost, mine: Sequence[RungJob], plans: Sequence[RungPlan], until: Any = None
) -> LadderState:
    """The rungs this budget's ended jobs left, read back from the jobs (oldest first)."""
    from airflow_vertex_dist.jobs.failures import classify_job

    state = LadderState()
    for rung, job in mine:
        if until is not None and job is until:
            break
        plan = plans[rung - 1]
        failure = classify_job(job, strategy=strategy_of(plan), pending_limit_s=pending_limit_s(plan))
        if failure is None or not failure.capacity:
            continue
        state.steps.append(
            {
                "rung": rung,
                "name": plan.name,
                "region": region_of(plan, host.hook.location),
                "job": str(job["name"]),
                "outcome": failure.kind,
                "reason": failure.reason,
                "seconds": round(rung_seconds(job), 3),
            }
        )
        if plan.rung.action(failure.kind) == "retry":
            state.retries[rung] = state.retries.get(rung, 0) + 1
    return state


def cancel_task_jobs(host: WaitHost, found: LadderJobs, reason: str) -> None:
    """Cancel this task's unfinished jobs on every rung (``found``; the deferral timed out)."""
    from airflow_vertex_dist.hooks.find_or_create import NO_CANCEL_STATES
    from airflow_vertex_dist.jobs.dicts import job_state

    for _rung, job in found.mine:
        if job_state(job) not in NO_CANCEL_STATES and host.cancel_on_kill:
            host.log.warning("Cancelling %s (%s)", job["name"], reason)
            host.hook.cancel_job(str(job["name"]))
