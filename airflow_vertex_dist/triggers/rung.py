"""``VertexRungTrigger``: the job trigger of one rung of a capacity ladder.

It waits like ``VertexJobTrigger`` (every event and rule of that trigger), and also ends the wait when
the job has not started within the rung's ``pending_limit`` of its ``createTime``: a stockout that
shows as a job left QUEUED or PENDING (``classify_job``). The shared poller reports a job when it
changes, and a job left PENDING does not change, so the limit is also the wait's deadline: then the
trigger reads the job once more. That event is an ``error`` event carrying the job, still unfinished:
the task, resumed in a worker, cancels it, waits until it ended and moves on to the next rung, so at
most one of the task's jobs is live at any moment. The trigger itself cancels nothing for a pending
limit (the task's own deadline still cancels the job, as ``VertexJobTrigger``'s does).
"""

from __future__ import annotations

import time
from typing import Any

from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos
from airflow_vertex_dist.jobs.dicts import compact_job, job_state, parse_job_name
from airflow_vertex_dist.jobs.events import JobEvent
from airflow_vertex_dist.jobs.failures import classify_job
from airflow_vertex_dist.jobs.types import Job
from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

__all__ = ["VertexRungTrigger"]


class VertexRungTrigger(VertexJobTrigger):
    """``VertexJobTrigger`` with a rung's limit on the wait for the job to start.

    :param pending_limit: seconds the job may stay QUEUED or PENDING without starting; ``None``: no
        limit.
    :param strategy: the rung's scheduling strategy (a FLEX_START job past the limit is "flex-start not
        granted", another one a stockout).
    :param rung: the rung's number (1-based), for the messages.
    :param job_created: the job's ``createTime`` (RFC 3339), from which ``pending_limit`` counts.
    """

    def __init__(
        self,
        *,
        pending_limit: float | None = None,
        strategy: str | None = None,
        rung: int = 1,
        job_created: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if pending_limit is not None and not float(pending_limit) > 0:
            raise ValueError(
                f"pending_limit: must be a positive number of seconds or None (got {pending_limit!r})"
            )
        if int(rung) < 1:
            raise ValueError(f"rung: must be at least 1 (got {rung!r})")
        self.pending_limit = None if pending_limit is None else float(pending_limit)
        self.strategy = strategy
        self.rung = int(rung)
        if job_created is not None:
            rfc3339_nanos(job_created)  # ValueError for a value that is not a time
        self.job_created = job_created
        self._task_deadline: float | None = None

    def serialize_kwargs(self) -> dict[str, Any]:
        return {
            **super().serialize_kwargs(),
            "pending_limit": self.pending_limit,
            "strategy": self.strategy,
            "rung": self.rung,
            "job_created": self.job_created,
        }

    def deadline(self, started: float) -> float | None:
        """The task's deadline, or the moment the rung's ``pending_limit`` runs out if it comes first."""
        task = super().deadline(started)
        self._task_deadline = task
        if self.pending_limit is None or self.job_created is None:
            return task
        # the job's age is on the service's clock (self.pace: this host's unless an emulator plays a
        # scenario faster), this host's may be skewed from it: never more than the whole limit from the
        # start of this wait, on this process's monotonic clock
        wall_end = rfc3339_nanos(self.job_created) / 1e9 + self.pending_limit
        left = min(self.pending_limit, max(0.0, wall_end - self.pace.now_ns() / 1e9))
        pending = started + self.pace.real_s(left)
        return pending if task is None else min(task, pending)

    async def give_up(self, message: str, job: Job | None = None, *, left: str = "running") -> JobEvent:
        """At the task's deadline, ``VertexJobTrigger``'s (cancel, error); at the rung's pending limit,
        the job read once more, uncancelled, for the task to judge."""
        if self._task_deadline is not None and time.monotonic() >= self._task_deadline:
            return await super().give_up(message, job, left=left)
        from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook

        name = parse_job_name(self.job_name)
        async with VertexJobsAsyncHook(
            self.conn_id,
            project_id=name.project,
            location=name.location,
            impersonation_chain=self.impersonation_chain or None,
        ) as hook:
            current = await hook.get_job_or_none(self.job_name)
        if current is None:
            return {"status": "error", "message": f"job {self.job_name} no longer exists", "job": None}
        event = await self.decide(current)
        if event is not None:
            return event
        message = (
            f"job {self.job_name} (rung {self.rung}): the rung's pending_limit ran out; judged by the task"
        )
        return {"status": "error", "message": message, "job": compact_job(current)}

    async def decide(self, job: Job) -> JobEvent | None:
        failure = classify_job(
            job, strategy=self.strategy, pending_limit_s=self.pending_limit, now_ns=self.pace.now_ns()
        )
        if failure is not None and failure.kind in ("stockout", "flex-start not granted"):
            state = job_state(job)
            if state in ("JOB_STATE_QUEUED", "JOB_STATE_PENDING"):
                message = f"job {job.get('name', '?')} (rung {self.rung}): {failure.kind}: {failure.reason}"
                return {"status": "error", "message": message, "job": compact_job(job)}
        return await super().decide(job)
