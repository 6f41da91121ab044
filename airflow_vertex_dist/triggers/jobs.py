"""``VertexJobTrigger``: waits in the triggerer for a CustomJob or HyperparameterTuningJob to end.

The trigger carries plain JSON kwargs only -- the job name and settings, never credentials -- so it
survives a triggerer restart: the new triggerer rebuilds it from the stored kwargs and resumes waiting
on the same job. Jobs are polled through the process's shared poller
(``airflow_vertex_dist.triggers.poller``): N waiting triggers cost about one List call per interval.

It fires exactly one event, ``{"status": "success" | "error", "message": str, "job": <compact job>}``
(``compact_job``; ``None`` when the job no longer exists):

===========================  ==============================================================
SUCCEEDED                    success
FAILED, CANCELLED, EXPIRED   error, with the job's error message
PARTIALLY_SUCCEEDED          success if ``partial_success="succeed"``, else error
PAUSED                       keeps waiting for ``paused_grace`` seconds, then the job is
                             cancelled (``cancel_on_kill``) and error
job deleted / API error      error (transient errors are retried, never end the wait)
deadline reached             the job is cancelled (``cancel_on_kill``), then error
===========================  ==============================================================

The waiting itself is ``JobWaitTrigger``'s: every update is
fed to a ``ProgressLog``, so the triggerer's log (which
reaches the task log) shows each state change, replicas up k/n and trials done k/N with the best metric
so far.

A PAUSED job past its grace is billed for nothing and would block the run: with ``cancel_on_kill`` it
is cancelled, so it ends CANCELLED and a retry's find-or-create creates a new job instead of
re-attaching to it.

The deadline is the task's trigger timeout (``execution_timeout``), which the triggerer gives the
trigger as ``timeout_after``; ``timeout`` (seconds from the start of ``run``) is the fallback when
it runs elsewhere. The trigger fires just before the deadline so that it, not the scheduler's timeout
check (which would drop the trigger without cancelling anything), ends the task.

With ``converge`` (the task's labels, ``task_labels``: the operator passes them for a job it made
without the List after the Create, ``converge_in_wait``), the trigger does that List's work from the
shared poller's List, at no call of its own: the run's live jobs of the task's budget that run the same
spec converge on the oldest (``sibling_verdict``). When the oldest is its own job, the trigger cancels
the others, and with ``cancel_on_kill`` the live jobs of an earlier retry budget (a try before the task
was cleared). When it is not, the trigger fires ``reattach`` (``{"status": "reattach", ..., "job":
<the kept job>, "superseded": <its own>}``) and cancels nothing: the task cancels its own job and defers
again on the kept one, with a trigger that keeps it (one trigger cancels the rest, not every one). The
first List that serves the trigger is not bounded by create time, so a job older than its own is in it;
the later ones see any job of the run made after its own, such as one a stalled try's Create left.

``on_kill`` (Airflow >= 3.3 calls it when a user kills the deferred task; see ``_compat``) cancels the
job when ``cancel_on_kill``. A triggerer restart does not call it: the job keeps running. Airflow also
calls it, with the same "user action" message, on a triggerer that lost the trigger to another
triggerer (two or more running, this one's heartbeat late): then the task instance is still deferred,
and ``on_kill`` leaves the job to the triggerer that now waits on it
(``airflow_vertex_dist.triggers.task_state``). A task
marked by hand before the triggerer started this trigger is covered by
``airflow_vertex_dist.listeners``; one cleared then, by the next try (``operators/job.py``).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist.hooks.connection import DEFAULT_CONN_ID, RetryPolicy
from airflow_vertex_dist.hooks.find_or_create import LIVE_STATES, sibling_verdict
from airflow_vertex_dist.hooks.labels import RUN_LABEL
from airflow_vertex_dist.jobs.dicts import check_wait_settings, compact_job, job_state, parse_job_name
from airflow_vertex_dist.jobs.events import JobEvent
from airflow_vertex_dist.jobs.states import PausedClock, cancel_outcome, job_event
from airflow_vertex_dist.jobs.types import Job
from airflow_vertex_dist.triggers.base import JobWaitTrigger
from airflow_vertex_dist.triggers.poller import DEFAULT_PAGE_SIZE
from airflow_vertex_dist.triggers.task_state import task_instance_state

if TYPE_CHECKING:
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook

__all__ = ["VertexJobTrigger"]

#: Fire this many seconds before the deadline (the scheduler fails a timed-out trigger on its own).
DEADLINE_MARGIN_S = 1.0
#: on_kill must finish within the triggerer's bound (``[triggerer] on_kill_timeout``, 30 s by default).
ON_KILL_RETRY = RetryPolicy(initial_s=0.2, maximum_s=2.0, deadline_s=15.0, rpc_timeout_s=10.0)


class VertexJobTrigger(JobWaitTrigger):
    """Waits for a Vertex AI CustomJob or HyperparameterTuningJob to end; see the module doc.

    The common parameters are ``JobWaitTrigger``'s; besides:

    :param cancel_on_kill: cancel the job when the task is killed or times out.
    :param partial_success: ``fail`` (default) or ``succeed`` on PARTIALLY_SUCCEEDED.
    :param paused_grace: seconds a PAUSED job may stay paused before the trigger fails.
    :param timeout: seconds from the start of ``run`` to the deadline, when the triggerer gives
        no ``timeout_after``.
    :param page_size: List page size of the shared poller.
    :param converge: the task's labels (run labels, ``airflow-spec``, ``airflow-budget``): converge
        concurrent tries' jobs (see the module doc); ``None``: do not.
    """

    def __init__(
        self,
        *,
        job_name: str,
        conn_id: str = DEFAULT_CONN_ID,
        project_id: str | None = None,
        location: str | None = None,
        poll_interval: float = 10.0,
        cancel_on_kill: bool = True,
        partial_success: str = "fail",
        paused_grace: float = 3600.0,
        timeout: float | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        impersonation_chain: str | Sequence[str] = "",
        stream_logs: Any = None,
        log_timestamp: str = "",
        log_insert_id: str = "",
        deferred_at: float | None = None,
        converge: dict[str, str] | None = None,
        mask_spans: Sequence[str] = (),
    ) -> None:
        parse_job_name(job_name)
        if converge is not None and not (
            isinstance(converge, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in converge.items())
            and converge.get(RUN_LABEL)
        ):
            raise ValueError(f"converge: the task's labels as strings, with {RUN_LABEL!r} (got {converge!r})")
        check_wait_settings(partial_success, poll_interval, paused_grace)
        if timeout is not None and not float(timeout) > 0:
            raise ValueError(f"timeout: must be a positive number of seconds or None (got {timeout!r})")
        if int(page_size) < 1:
            raise ValueError(f"page_size: must be at least 1 (got {page_size!r})")
        super().__init__(
            job_name=job_name,
            conn_id=conn_id,
            project_id=project_id,
            location=location,
            poll_interval=poll_interval,
            stream_logs=stream_logs,
            log_timestamp=log_timestamp,
            log_insert_id=log_insert_id,
            impersonation_chain=impersonation_chain,
            deferred_at=deferred_at,
            mask_spans=mask_spans,
        )
        self.cancel_on_kill = bool(cancel_on_kill)
        self.partial_success = partial_success
        self.paused_grace = float(paused_grace)
        self.timeout = None if timeout is None else float(timeout)
        self.page_size = int(page_size)
        self.converge = dict(converge) if converge is not None else None
        self._cancelled_looked = False
        self._paused = PausedClock()

    def serialize_kwargs(self) -> dict[str, Any]:
        return {
            "cancel_on_kill": self.cancel_on_kill,
            "partial_success": self.partial_success,
            "paused_grace": self.paused_grace,
            "timeout": self.timeout,
            "page_size": self.page_size,
            "converge": self.converge,
        }

    def watch_page_size(self) -> int:
        return self.page_size

    # -- deadline ------------------------------------------------------------------------------------
    def deadline(self, started: float) -> float | None:
        """The deadline on the ``time.monotonic()`` clock, or ``None``."""
        candidates = []
        timeout_after = getattr(self, "timeout_after", None)
        if isinstance(timeout_after, datetime.datetime):
            if timeout_after.tzinfo is None:
                timeout_after = timeout_after.replace(tzinfo=datetime.timezone.utc)
            remaining = (timeout_after - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
            candidates.append(time.monotonic() + remaining)
        if self.timeout is not None:
            candidates.append(started + self.timeout)
        return min(candidates) - DEADLINE_MARGIN_S if candidates else None

    # -- convergence -----------------------------------------------------------------------------------
    def watch_converge(self) -> dict[str, str] | None:
        return self.converge

    async def check_siblings(self, job: Job, siblings: list[Job]) -> JobEvent | None:
        """Converge with the run's listed jobs (see the module doc). A job being cancelled, or
        cancelled, with no List behind it (it left the poller's List) is looked for once by a List of
        its own: another try's trigger may have cancelled it for an older job of the task."""
        if self.converge is None:
            return None
        state = job_state(job)
        if not siblings:
            if state not in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED") or self._cancelled_looked:
                return None
            self._cancelled_looked = True
            siblings = await self._list_run()
        kind = parse_job_name(self.job_name).kind
        verdict = sibling_verdict(kind, job, self.converge, siblings, self.log)
        keep = str(verdict.keep["name"])
        if keep != self.job_name:
            # Not ours to keep: the task cancels its own job and waits on the kept one, whose waiter
            # (this task's, once it re-deferred) cancels the rest; one trigger cancels, not every one.
            message = (
                f"job {self.job_name}: an older job of this task, {keep}, runs the same spec (concurrent "
                f"tries each made one): keeping {keep}, the task cancels {self.job_name}"
            )
            self.log.warning("%s", message)
            event = self.event("reattach", message, verdict.keep)
            event["superseded"] = self.job_name
            return event
        if state not in LIVE_STATES:
            return None  # its own state ends the wait; nothing here is to be cancelled for it
        if verdict.duplicates:
            self.log.warning(
                "%d unfinished jobs of this task were created at the same time (concurrent tries); "
                "keeping the oldest, %s, and cancelling %s",
                len(verdict.duplicates) + 1,
                keep,
                ", ".join(str(other["name"]) for other in verdict.duplicates),
            )
            for other in verdict.duplicates:
                await self._cancel_named(str(other["name"]))
        if self.cancel_on_kill:
            for other in verdict.earlier:
                self.log.warning(
                    "Cancelling %s (%s): made by a try before the task was cleared",
                    other["name"],
                    job_state(other),
                )
                await self._cancel_named(str(other["name"]))
        return None

    async def _list_run(self) -> list[Job]:
        """The task's jobs of every budget, by a List of this trigger's own (``converge`` but the
        budget)."""
        from airflow_vertex_dist.hooks.labels import BUDGET_LABEL, label_filter

        assert self.converge is not None
        run = {k: v for k, v in self.converge.items() if k != BUDGET_LABEL}
        try:
            async with self._short_hook(self.job_name) as hook:
                kind = parse_job_name(self.job_name).kind
                return list(await hook.list_jobs(kind, filter=label_filter(run)))
        except Exception as exc:
            self.log.warning("Listing the jobs of %s's run failed: %s", self.job_name, exc)
            return []

    # -- the verdict -----------------------------------------------------------------------------------
    def begin_wait(self) -> None:
        self._paused = PausedClock()

    async def decide(self, job: Job) -> JobEvent | None:
        event = job_event(
            job,
            partial_success=self.partial_success,
            paused_for_s=self._paused.paused_for(job),
            paused_grace=self.paused_grace,
        )
        if event is not None and job_state(job) == "JOB_STATE_PAUSED":  # past its grace
            event = await self.give_up(str(event["message"]), job, left="PAUSED")
        return event

    async def give_up(self, message: str, job: Job | None = None, *, left: str = "running") -> JobEvent:
        """The error event of a task that stops waiting: cancel the job first if ``cancel_on_kill``."""
        cancelled = await self._cancel() if self.cancel_on_kill else None
        message += cancel_outcome(self.cancel_on_kill, cancelled is not None, left=left)
        job = cancelled or job
        return {"status": "error", "message": message, "job": compact_job(job) if job else None}

    def _short_hook(self, job_name: str) -> VertexJobsAsyncHook:
        """A hook of its own for a few calls about ``job_name`` (``async with``), with the short retry
        ``on_kill`` must keep to."""
        from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook

        name = parse_job_name(job_name)
        return VertexJobsAsyncHook(
            self.conn_id,
            project_id=name.project,
            location=name.location,
            retry_policy=ON_KILL_RETRY,
            impersonation_chain=self.impersonation_chain or None,
        )

    async def _cancel(self) -> Job | None:
        """Cancel the job unless it already ended; the job after the request, or ``None`` on error."""
        return await self._cancel_named(self.job_name)

    async def _cancel_named(self, job_name: str) -> Job | None:
        """Cancel ``job_name`` unless it already ended; the job after the request, or ``None`` on
        error."""
        try:
            async with self._short_hook(job_name) as hook:
                job, sent = await hook.cancel_unless_ended(job_name)
                if not sent:
                    self.log.info("Job %s already ended (%s): not cancelling", job_name, job_state(job))
                    return job
                self.log.info("Cancelled job %s (was %s)", job_name, job_state(job))
                return await hook.get_job(job_name)
        except Exception as exc:
            self.log.warning("Cancelling job %s failed: %s", job_name, exc)
            return None

    async def on_kill(self) -> None:
        """Airflow >= 3.3: the triggerer stopped this trigger "by user action"; cancel the job if
        ``cancel_on_kill`` -- unless the task instance is still deferred: then the trigger only moved
        to another triggerer, which waits on the job now (``task_state``)."""
        if not self.cancel_on_kill:
            self.log.info("cancel_on_kill=False: leaving job %s running", self.job_name)
            return
        if await task_instance_state(self) == "deferred":
            self.log.info(
                "Not cancelling job %s: the task is still deferred, so its trigger moved to another "
                "triggerer (which waits on the job now) rather than being ended by a user",
                self.job_name,
            )
            return
        await self._cancel()
