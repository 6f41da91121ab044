"""The job-state rules of a wait: target and failure states, the job trigger's verdict, PAUSED grace.

Pure: no Airflow or Google imports. Shared by the sensors, the job trigger and the polling operators.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_vertex_dist.common.rfc3339 import seconds_since
from airflow_vertex_dist.jobs.dicts import compact_job, error_suffix, job_state, short_state
from airflow_vertex_dist.jobs.events import JobEvent, Verdict
from airflow_vertex_dist.jobs.kinds import ACTIVE_STATES, TERMINAL_STATES

__all__ = [
    "PausedClock",
    "cancel_outcome",
    "job_condition",
    "job_event",
    "normalize_state",
]

_ALL_STATES = ACTIVE_STATES | TERMINAL_STATES


def normalize_state(state: str, *, field: str = "target_states") -> str:
    """``"succeeded"`` / ``"SUCCEEDED"`` / ``"JOB_STATE_SUCCEEDED"`` -> ``"JOB_STATE_SUCCEEDED"``."""
    text = str(state).strip().upper()
    full = text if text.startswith("JOB_STATE_") else f"JOB_STATE_{text}"
    if full not in _ALL_STATES:
        known = ", ".join(sorted(s.removeprefix("JOB_STATE_") for s in _ALL_STATES))
        raise ValueError(f"{field}: {state!r} is not a job state (one of {known})")
    return full


def job_condition(
    job: Mapping[str, Any], target_states: Iterable[str], failure_states: Iterable[str] | None = None
) -> Verdict | None:
    """Success once the job is in a target state; error on a failure state (fail fast).

    ``failure_states`` defaults to every terminal state that is not a target: a job that ended
    anywhere else can never reach a target any more.
    """
    targets = {normalize_state(s) for s in target_states}
    failures = (
        {normalize_state(s, field="failure_states") for s in failure_states}
        if failure_states is not None
        else set(TERMINAL_STATES) - targets
    )
    state = job_state(job)
    name = job.get("name", "?")
    if state in targets:
        return Verdict("success", f"job {name} is {short_state(state)}")
    if state in failures:
        return Verdict("error", f"job {name} ended {short_state(state)}{error_suffix(job)}")
    return None


def job_event(
    job: Mapping[str, Any],
    *,
    partial_success: str = "fail",
    paused_for_s: float | None = None,
    paused_grace: float = 0.0,
) -> JobEvent | None:
    """The event payload for a job in a final (for the task) state, ``None`` while it should wait."""
    name = job.get("name", "?")
    state = job_state(job)
    detail = error_suffix(job)
    if state == "JOB_STATE_SUCCEEDED":
        return {"status": "success", "message": f"job {name} succeeded", "job": compact_job(job)}
    if state == "JOB_STATE_FAILED":
        message = f"job {name} failed{detail or ' (no error message)'}"
    elif state == "JOB_STATE_CANCELLED":
        message = f"job {name} was cancelled{detail}"
    elif state == "JOB_STATE_EXPIRED":
        message = f"job {name} expired before it could run{detail}"
    elif state == "JOB_STATE_PARTIALLY_SUCCEEDED":
        ok = partial_success == "succeed"
        how = "accepted: partial_success='succeed'" if ok else "a failure: partial_success='fail'"
        return {
            "status": "success" if ok else "error",
            "message": f"job {name} PARTIALLY_SUCCEEDED ({how}){detail}",
            "job": compact_job(job),
        }
    elif state == "JOB_STATE_PAUSED" and paused_for_s is not None and paused_for_s >= paused_grace:
        message = f"job {name} stayed PAUSED for {paused_for_s:.0f}s (grace {paused_grace:g}s)"
    elif state in TERMINAL_STATES:  # pragma: no cover - every terminal state is listed above
        message = f"job {name} ended in {state}{detail}"
    else:
        return None
    return {"status": "error", "message": message, "job": compact_job(job)}


class PausedClock:
    """How long a job has been PAUSED, for the grace check of a wait (trigger or polling operator).

    The longer of: since this wait first saw it paused, and since the job's last update (which
    survives a triggerer restart or a retried task re-attaching to a job paused long ago).
    """

    def __init__(self) -> None:
        self._since: float | None = None

    def paused_for(self, job: Mapping[str, Any]) -> float | None:
        """Seconds the job has been paused, or ``None`` when it is not PAUSED."""
        if job_state(job) != "JOB_STATE_PAUSED":
            self._since = None
            return None
        now = time.monotonic()
        self._since = now if self._since is None else self._since
        return max(now - self._since, seconds_since(job.get("updateTime")) or 0.0)


def cancel_outcome(cancel_on_kill: bool, cancelled: bool, *, left: str = "running") -> str:
    """What became of the job when a task gave up on it, appended to the task's failure message."""
    if not cancel_on_kill:
        return f"; the job was left {left} (cancel_on_kill=False)"
    return "; the job was cancelled" if cancelled else "; cancelling the job failed"
