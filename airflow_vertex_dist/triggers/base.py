"""The base of every trigger of the package: one job waited on through the shared poller, one event.

``JobWaitTrigger`` holds what the job trigger (``jobs``) and the
sensor triggers (``sensors``) share:

- the common kwargs (job name, connection, the task's impersonation chain, poll interval, the replica
  log stream and its cursor);
- ``serialize``, whose classpath is derived from ``type(self)`` (module and
  qualified name), so a subclass defined in another module serializes under its own path and the
  triggerer imports that subclass again. A class the triggerer could not import by that path (one
  nested in a class or defined in a function) is refused when it is serialized, not when the triggerer
  fails to rebuild it;
- ``run``: subscribe to the process's shared job poller
  (``watch_job``), log every update's progress
  (``ProgressLog``), ask ``decide``
  whether the wait is over, and fire exactly one event, a
  ``JobEvent``:
  ``{"status": "success" | "error", "message": str, "job": <compact job> | None}``. A deleted job or a
  non-transient API error ends the wait with an error event (transient errors are retried by the
  poller and never end it); a subclass with a deadline (``deadline``) gives up
  through ``give_up`` when it passes.
"""

from __future__ import annotations

import abc
import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_vertex_dist._compat import ASYNC_TIMEOUT, resume_race_possible
from airflow_vertex_dist.hooks.connection import VertexConnection, parse_impersonation_chain
from airflow_vertex_dist.hooks.service_clock import HOST_TIME, ServiceTime, aread_service_time
from airflow_vertex_dist.jobs.dicts import compact_job
from airflow_vertex_dist.jobs.events import EventStatus, JobEvent
from airflow_vertex_dist.jobs.kinds import ever_ran
from airflow_vertex_dist.jobs.progress import ProgressLog
from airflow_vertex_dist.jobs.types import Job
from airflow_vertex_dist.logs.masking import TriggerSecrets
from airflow_vertex_dist.logs.trigger_stream import log_stream_start
from airflow_vertex_dist.triggers.poller import DEFAULT_PAGE_SIZE, JobNotFoundError, watch_job

__all__ = ["RESUME_HOLD_S", "JobWaitTrigger", "trigger_classpath"]

#: Seconds after the deferral before a triggerer hands the task its event. Airflow's scheduler (3.1 to
#: 3.3.2 at least; apache/airflow#72716, #67287) can read the executor's "success" report of the worker
#: process that deferred *after* the resumed try was queued or started, take it for the resumed try's
#: end and fail it as "killed externally": the task loses a try, and its process, still running until
#: its next heartbeat, may submit a job while its pool slot is already given to another task. The
#: scheduler reads the report in the loop after the deferring process exits; the harm comes when the
#: resumed try is queued in that same loop, so the event must come a whole scheduler loop after the
#: exit. 5 s was not enough on a 2-core host at load 17, where one loop took about 5 s and the report
#: was read 5.4 s after the exit; an event that comes sooner than this (a job that ends or stocks out
#: within seconds) waits for the rest of it. Jobs that run longer than this are not delayed at all.
#: The hold is measured on the triggerer's own monotonic clock, from when the trigger starts running
#: (always after the deferral: the triggerer only runs a trigger the deferral has stored), never by
#: comparing the worker's wall time of the deferral with the triggerer's: 45 s of skew between the two
#: hosts stretched a 10 s hold to 55 s (or would drop it, the other way round).
RESUME_HOLD_S = 10.0


def trigger_classpath(cls: type) -> str:
    """``module.ClassName`` of a trigger class, as the triggerer imports it again.

    ``TypeError`` for a class that is not defined at the top level of its module: its qualified name
    (``Outer.Inner``, ``f.<locals>.Local``) cannot be imported by that path.
    """
    if "." in cls.__qualname__:
        raise TypeError(
            f"{cls.__module__}.{cls.__qualname__}: a trigger class must be defined at the top level of "
            "a module, or the triggerer cannot import it by its classpath"
        )
    return f"{cls.__module__}.{cls.__qualname__}"


class JobWaitTrigger(BaseTrigger):
    """Waits on one Vertex AI job until ``decide`` ends the wait; see the module doc.

    :param job_name: ``projects/P/locations/L/(customJobs|hyperparameterTuningJobs)/ID``.
    :param conn_id: the ``vertex_dist`` connection.
    :param project_id: kept for the record; the job name decides the project.
    :param location: kept for the record; the job name decides the location.
    :param poll_interval: seconds between polls (the shared poller uses its waiters' smallest).
    :param stream_logs: replica selection whose log lines the trigger writes to its log (which
        reaches the task log): ``"default"``, ``"all"``, a list of replica keys, or ``None`` (off).
        Lines come from the process's shared log poller (``logs.poller``).
    :param log_timestamp: with ``log_insert_id``, the cursor to resume streaming after.
    :param impersonation_chain: replaces the connection's impersonation chain for the job and log
        reads (the task's own; a list or comma separated).
    :param deferred_at: when the task deferred (Unix seconds, the worker's clock); ``None``, the
        default: now, which is when the operator builds the trigger. Kept for the record only: in a
        triggerer the event is held until ``RESUME_HOLD_S`` after the trigger started running, on the
        triggerer's monotonic clock (see ``RESUME_HOLD_S``).
    :param mask_spans: where the job carries values the task's secrets masker hides
        (``logs.masking.secret_spans``: JSON pointers and character spans, never the values): the
        trigger teaches them to its own masker from the job it reads, before it writes a line.
    """

    def __init__(
        self,
        *,
        job_name: str,
        conn_id: str,
        project_id: str | None = None,
        location: str | None = None,
        poll_interval: float = 10.0,
        stream_logs: Any = None,
        log_timestamp: str = "",
        log_insert_id: str = "",
        impersonation_chain: str | Sequence[str] = "",
        deferred_at: float | None = None,
        mask_spans: Sequence[str] = (),
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        #: where the job carries secrets the task's masker hides (positions only: ``logs.masking``)
        self.mask_spans = [str(span) for span in mask_spans]
        self.secrets = TriggerSecrets(self.mask_spans)
        self.deferred_at = time.time() if deferred_at is None else float(deferred_at)
        self.job_name = job_name
        self.conn_id = conn_id
        self.project_id = project_id
        self.location = location
        self.poll_interval = float(poll_interval)
        #: replica log streaming (logs/trigger_stream.py); None: off
        self.stream_logs = stream_logs
        self.log_timestamp = str(log_timestamp or "")
        self.log_insert_id = str(log_insert_id or "")
        #: the task's own chain (comma-joined: kwargs are JSON scalars); "" means the connection's
        self.impersonation_chain = ",".join(parse_impersonation_chain(impersonation_chain))
        #: the service's clock (hooks/service_clock.py), read when the wait starts and at each update
        self.pace: ServiceTime = HOST_TIME
        self._clock_conn: VertexConnection | None = None
        self._clock_tried = False

    # -- serialization ---------------------------------------------------------------------------------
    def serialize_kwargs(self) -> dict[str, Any]:
        """The subclass's own kwargs (plain JSON), stored after the common ones."""
        return {}

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            trigger_classpath(type(self)),
            {
                "job_name": self.job_name,
                "conn_id": self.conn_id,
                "project_id": self.project_id,
                "location": self.location,
                "poll_interval": self.poll_interval,
                "stream_logs": self.stream_logs,
                "log_timestamp": self.log_timestamp,
                "log_insert_id": self.log_insert_id,
                "impersonation_chain": self.impersonation_chain,
                "deferred_at": self.deferred_at,
                "mask_spans": self.mask_spans,
                **self.serialize_kwargs(),
            },
        )

    # -- what a subclass decides -----------------------------------------------------------------------
    @abc.abstractmethod
    async def decide(self, job: Job) -> JobEvent | None:
        """The event payload once the wait is over for this job update, ``None`` to keep waiting."""

    def begin_wait(self) -> None:
        """Called at the start of ``run``: reset what one wait keeps between updates."""

    def watch_page_size(self) -> int:
        """The List page size of the shared poller this trigger waits through."""
        return DEFAULT_PAGE_SIZE

    def deadline(self, started: float) -> float | None:
        """When to give up, on the ``time.monotonic()`` clock; ``None`` (the default): never."""
        return None

    def watch_converge(self) -> dict[str, str] | None:
        """The task's labels when the wait converges concurrent tries' jobs (``check_siblings``);
        ``None`` (the default): it does not."""
        return None

    async def check_siblings(self, job: Job, siblings: list[Job]) -> JobEvent | None:
        """With ``watch_converge``, after every update: an event that ends this wait because of the
        jobs listed beside ``job`` (its run's; empty when no List brought the update), or ``None`` to
        go on."""
        return None

    async def give_up(self, message: str, job: Job | None = None, *, left: str = "running") -> JobEvent:
        """The error event of a wait that stops before the job ended (``left``: the job's state)."""
        return {"status": "error", "message": message, "job": compact_job(job) if job else None}

    async def service_time(self) -> ServiceTime:
        """The service's clock: this host's, or the pace of the scenario an emulator connection plays
        (``hooks.service_clock``). A connection that cannot be read here leaves the host's clock: the
        wait itself reports it."""
        if self._clock_conn is None and not self._clock_tried:
            from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook

            self._clock_tried = True
            try:
                async with VertexJobsAsyncHook(self.conn_id) as hook:
                    self._clock_conn = await hook.aconnection()
            except Exception as exc:  # the connection is the wait's to report, not the clock's
                self.log.debug("No service clock for %s: %s", self.conn_id, exc)
        return HOST_TIME if self._clock_conn is None else await aread_service_time(self._clock_conn)

    # -- the wait ----------------------------------------------------------------------------------------
    def event(self, status: EventStatus, message: str, job: Job | None) -> JobEvent:
        """An event payload: ``job`` compacted (``compact_job``)."""
        return {"status": status, "message": message, "job": compact_job(job) if job else None}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        hold_until = time.monotonic() + RESUME_HOLD_S  # one clock: this process's, where the wait happens
        async for event in self._wait():
            if resume_race_possible():
                await asyncio.sleep(max(0.0, hold_until - time.monotonic()))
            yield event

    async def _wait(self) -> AsyncIterator[TriggerEvent]:
        self.pace = await self.service_time()
        started = time.monotonic()
        deadline = self.deadline(started)
        self.begin_wait()
        progress = ProgressLog(getattr(self, "first_seen", "submitted"))
        logs = log_stream_start(self) if self.stream_logs is not None else None
        converge = self.watch_converge()
        try:
            async with watch_job(
                self.job_name,
                conn_id=self.conn_id,
                poll_interval=self.pace.poll_s(self.poll_interval),
                page_size=self.watch_page_size(),
                impersonation_chain=parse_impersonation_chain(self.impersonation_chain),
                converge=converge,
            ) as updates:
                while True:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        waited = time.monotonic() - started
                        yield _fire(
                            await self.give_up(
                                f"job {self.job_name}: the task timed out after waiting {waited:.0f}s"
                            )
                        )
                        return
                    try:
                        job = await asyncio.wait_for(updates.next(), timeout=remaining)
                    except ASYNC_TIMEOUT:
                        continue
                    await self.secrets.learn(job)  # before the stream writes a line of it
                    self.pace = await self.service_time()
                    news = progress.update(job)
                    payload = None
                    if converge is not None:
                        payload = await self.check_siblings(job, updates.siblings)
                    if payload is None:
                        payload = await self.decide(job)
                    if payload is not None and logs is not None and ever_ran(job):  # else no line left
                        # the job's end is written after its last replica lines
                        await logs.finish(timeout=2 * self.poll_interval + 5, closing=news)
                        news = []
                    for line in news:
                        self.log.info("%s", line)
                    if payload is not None:
                        yield _fire(payload)
                        return
        except JobNotFoundError as exc:
            yield _fire(self.event("error", str(exc), None))
        except Exception as exc:  # a non-transient API error (transient ones never end the wait)
            self.log.error("Waiting for %s failed: %s", self.job_name, exc)
            yield _fire(self.event("error", f"waiting for job {self.job_name} failed: {exc}", None))
        finally:
            if logs is not None:
                logs.close()


def _fire(payload: JobEvent) -> TriggerEvent:
    return TriggerEvent(payload)  # type: ignore[no-untyped-call]
