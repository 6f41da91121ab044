"""A trigger's replica log stream: lines from the shared log poller written to the trigger's log.

In Airflow 3 a trigger's log reaches its task's log, so a deferred task shows its job's replica lines
(``<time> [<replica key>] <text>``, with each entry's own time, in the replicas' time order, each at
the logging level of its Cloud Logging severity: ``logs.lines``) while the triggerer waits for the
job. The stream resumes after the later of the cursor in the trigger's kwargs and the one it saved in its task
instance's XCom (``airflow_vertex_dist.logs.cursor``), so a restarted triggerer does not
write the lines already shown again.

The triggerer (Airflow 3.3) writes a trigger's log lines to the task's log file from a separate log
channel, and closes that file when it learns the trigger finished: lines still in that channel then
land in the triggerer's own log, not the task's (seen on the real stack: the last 31 of 80 lines of a
final batch). So after writing lines, ``TriggerLogStream.finish`` lets ``FINAL_LINES_GRACE_S``
pass before the trigger fires its event, which gives the triggerer time to write them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any, Protocol

from airflow_vertex_dist._compat import ASYNC_TIMEOUT
from airflow_vertex_dist.hooks.connection import parse_impersonation_chain
from airflow_vertex_dist.jobs.dicts import parse_job_name
from airflow_vertex_dist.logs.cursor import XCOM_TIMEOUT_S, CursorStore, later
from airflow_vertex_dist.logs.lines import write_lines
from airflow_vertex_dist.logs.masking import TriggerSecrets
from airflow_vertex_dist.logs.poller import LogCursor, get_log_poller

__all__ = [
    "FINAL_LINES_GRACE_S",
    "LogStreamingTrigger",
    "StartingLogStream",
    "TriggerLogStream",
    "log_stream_start",
]

#: how long lines written at the end of a wait get before the trigger fires (see the module doc)
FINAL_LINES_GRACE_S = 1.0


class _InfoLog(Protocol):
    def info(self, msg: str, /, *args: Any, **kwargs: Any) -> Any: ...

    def log(self, level: int, msg: str, /, *args: Any, **kwargs: Any) -> Any: ...


class LogStreamingTrigger(Protocol):
    """What a log stream reads of its trigger (``JobWaitTrigger``);
    it writes the resume cursor (``log_timestamp``, ``log_insert_id``) back. The triggerer also gives a
    trigger its ``task_instance``, which the stream's cursor store reads when it is there."""

    job_name: str
    conn_id: str
    impersonation_chain: str
    poll_interval: float
    stream_logs: Any
    log_timestamp: str
    log_insert_id: str
    secrets: TriggerSecrets

    @property
    def log(self) -> _InfoLog: ...


class TriggerLogStream:
    """Subscribes ``trigger``'s job to the loop's log poller and writes its lines as they come.

    ``cursor`` is where to resume (after that line; default: the trigger's kwargs' cursor); ``store``
    keeps the cursor across triggerer restarts (None: the kwargs' cursor only).
    """

    def __init__(
        self, trigger: LogStreamingTrigger, cursor: LogCursor | None = None, store: CursorStore | None = None
    ) -> None:
        name = parse_job_name(trigger.job_name)
        self.trigger = trigger
        self.store = store
        self.poller = get_log_poller(
            name.project,
            conn_id=trigger.conn_id,
            impersonation_chain=parse_impersonation_chain(trigger.impersonation_chain),
        )
        self.sub = self.poller.subscribe(
            name.job_id,
            selection=trigger.stream_logs,
            cursor=cursor or LogCursor(trigger.log_timestamp, trigger.log_insert_id),
            interval=trigger.poll_interval,
        )
        self._task = asyncio.get_running_loop().create_task(self._pump(), name=f"vertex-logs {name.job_id}")
        self._last_write: float | None = None

    def _write(self, lines: list[Any]) -> None:
        # masked here, whatever the triggerer's log pipeline does (``logs.masking``), in time order
        lines = write_lines(self.trigger.log, lines)
        if lines:
            self._last_write = asyncio.get_running_loop().time()
            # the resume point, were this trigger rebuilt from its kwargs in this process ...
            self.trigger.log_timestamp, self.trigger.log_insert_id = lines[-1].timestamp, lines[-1].insert_id
            # ... or by another triggerer (saved after the lines are written: a crash repeats, never drops)
            if self.store is not None:
                self.store.save(LogCursor.of(lines[-1]))

    async def _pump(self) -> None:
        secrets = getattr(self.trigger, "secrets", None)
        if secrets is not None:
            await secrets.ready.wait()  # the job's secrets are known before a line is written
        while True:
            self._write(await self.sub.wait())

    async def finish(self, timeout: float, closing: Sequence[str] = ()) -> None:
        """After the job ended: wait for a poll cycle that read every line stamped before now (the
        poller's settle window, then one cycle; bounded by ``timeout`` plus that window), then write
        what it read, then ``closing`` (the job's end: it comes after the job's last lines); returns
        once lines written lately had ``FINAL_LINES_GRACE_S`` to reach the task's log."""
        await self.poller.read_through(time.time(), timeout + self.poller.settle)
        self._write(self.sub.take())
        for text in closing:
            self.trigger.log.info("%s", text)
            self._last_write = asyncio.get_running_loop().time()
        if self.store is not None:
            await self.store.flush(timeout=timeout)
        if self._last_write is not None:
            left = self._last_write + FINAL_LINES_GRACE_S - asyncio.get_running_loop().time()
            if left > 0:
                await asyncio.sleep(left)  # the triggerer's log channel, not a state we can poll

    def close(self) -> None:
        self._task.cancel()
        self.sub.close()
        if self.store is not None:
            self.store.close()


class StartingLogStream:
    """A trigger's log stream being started: the saved cursor is read (one XCom call through the
    triggerer's supervisor) in a task of its own, so the job wait never waits for it -- after a
    restart, a triggerer's supervisor answers its triggers' reads one at a time. The stream
    (``TriggerLogStream``) subscribes once the cursor is known."""

    def __init__(self, trigger: LogStreamingTrigger) -> None:
        self.trigger = trigger
        self.stream: TriggerLogStream | None = None
        self._task = asyncio.get_running_loop().create_task(self._start(), name="vertex-logs start")

    async def _start(self) -> None:
        trigger = self.trigger
        cursor = LogCursor(trigger.log_timestamp, trigger.log_insert_id)
        store = CursorStore.of(trigger)
        if store is not None:
            saved = await store.load()
            if saved is not None:
                resumed = later(cursor, saved)
                if resumed != cursor:
                    trigger.log.info(
                        "Replica logs resume after %s (the cursor saved before a restart)", resumed
                    )
                cursor = resumed
            store.saved = cursor
        try:
            self.stream = TriggerLogStream(trigger, cursor, store)
        except Exception as exc:  # streaming is best effort: never fail the wait that uses it
            trigger.log.info("Replica logs are not streamed: %s", exc)

    async def started(self, timeout: float | None = None) -> TriggerLogStream | None:
        """The stream, once subscribed (None if that took longer than ``timeout`` or failed)."""
        with contextlib.suppress(Exception, *ASYNC_TIMEOUT):
            await asyncio.wait_for(asyncio.shield(self._task), timeout=timeout)
        return self.stream

    async def finish(self, timeout: float, closing: Sequence[str] = ()) -> None:
        """After the job ended: the stream's ``TriggerLogStream.finish``, once it has started (its
        cursor read is bounded by ``XCOM_TIMEOUT_S``: the task's log should have the job's last lines);
        ``closing`` written after them (or at once, without a stream)."""
        stream = await self.started(XCOM_TIMEOUT_S + timeout)
        if stream is not None:
            await stream.finish(timeout, closing)
            return
        for text in closing:
            self.trigger.log.info("%s", text)

    def close(self) -> None:
        self._task.cancel()
        if self.stream is not None:
            self.stream.close()


def log_stream_start(trigger: LogStreamingTrigger) -> StartingLogStream:
    """Start ``trigger``'s stream after the later of its kwargs' cursor and its saved one."""
    return StartingLogStream(trigger)
