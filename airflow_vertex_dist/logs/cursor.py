"""Where a deferred task's log stream resumes after a triggerer restart: its cursor, kept in an XCom.

A trigger cannot change its own serialized kwargs while it runs (Airflow stores them once, when the
task defers), so a trigger rebuilt by a new triggerer would start streaming again from the cursor the
task deferred with -- and write every line already shown a second time. Airflow 3 lets trigger code
read and write its task instance's XComs through the triggerer's supervisor (the Task SDK's XCom API
over the triggerer's comms channel, like Connections and Variables), and the triggerer gives each
trigger its ``task_instance``. So the stream keeps its cursor in the XCom
``CURSOR_XCOM_KEY`` (``vertex_dist_log_cursor``) of its own task instance:

* **written** after each batch of lines is written to the log, at most one write in flight per
  stream (a batch that comes while one is being written is saved right after it: the newest cursor
  wins), so a stream costs at most about one XCom write per poll interval, and none while its job is
  silent;
* **read** once when the trigger starts: the stream resumes after the later of that cursor and the
  one in its kwargs;
* **seeded** by the task before it defers (``seed_cursor``, with the kwargs' cursor): a read of an
  XCom that does not exist makes the Task SDK's API client log an ERROR (``XCom not found``) in the
  triggerer, and the triggerer's supervisor channel carries no call that asks without it
  (``GetXCom`` only: no count, no slice), so a first start finds the seeded value instead.

The cursor is saved after its lines are handed to the trigger's log, never before: a triggerer
stopped before the save lands repeats that last batch (at most one poll interval of lines) rather than
skip it. A graceful restart (SIGTERM, as deployments stop a triggerer) once the save landed repeats
and drops nothing (tests/stack/test_training_logs.py). A ``kill -9`` also loses whatever the
triggerer's log pipeline had not yet written to the log file, as it would any trigger's lines; should
the cursor save have landed first, those lines are not streamed again.

The XCom belongs to the try: Airflow clears a task instance's XComs when a new try starts (not when a
deferred task resumes), so a retry streams its job's lines from the start, into its own try's log.

Best effort: when the trigger runs outside a triggerer (no task instance, no supervisor channel, as
under ``dag.test()``) or the XCom call fails, streaming goes on with the kwargs' cursor only.
The Task SDK's async XCom calls (``XCom.aset`` / ``XCom.aget_one``, Airflow >= 3.3) are used where the
channel carries them; otherwise the sync ones run through ``asgiref``'s ``sync_to_async``, as Airflow
3.1 asks trigger code to call the Task SDK.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from airflow_vertex_dist._compat import ASYNC_TIMEOUT, async_supervisor_channel, has_supervisor_channel
from airflow_vertex_dist.common.rfc3339 import rfc3339_key
from airflow_vertex_dist.logs.poller import LogCursor

__all__ = ["CURSOR_XCOM_KEY", "CursorStore", "later", "seed_cursor"]

log = logging.getLogger(__name__)

CURSOR_XCOM_KEY = "vertex_dist_log_cursor"
#: bound on one XCom call, so a stuck channel never holds the stream (or the trigger's end) up for long;
#: generous, as the job wait never waits for it (a loaded stack took over 30 s after a restart)
XCOM_TIMEOUT_S = 120.0


def later(a: LogCursor, b: LogCursor) -> LogCursor:
    """The cursor further along (the empty cursor is before every other)."""
    if not a.timestamp:
        return b
    if not b.timestamp:
        return a
    key_a = (rfc3339_key(a.timestamp), a.insert_id)
    key_b = (rfc3339_key(b.timestamp), b.insert_id)
    return a if key_a >= key_b else b


def seed_cursor(ti: Any, cursor: LogCursor | None = None) -> None:
    """Push the cursor XCom a deferring task's trigger reads at its first start (the module doc)."""
    cursor = cursor or LogCursor()
    ti.xcom_push(key=CURSOR_XCOM_KEY, value={"timestamp": cursor.timestamp, "insert_id": cursor.insert_id})


def _xcom_class() -> Any:
    # The Task SDK's XCom (the configured XCom backend; Airflow's "Public Interface" page lists it as a
    # public utility at this path). Not ``airflow.sdk.BaseXCom``: that one skips a custom backend.
    from airflow.sdk.execution_time.xcom import XCom

    return XCom


def _async_calls(xcom: Any) -> bool:
    """Whether to use the Task SDK's async XCom calls: it has them, and the channel can carry them
    (the triggerer's does; the in-process one of ``dag.test()`` answers sync calls only)."""
    return hasattr(xcom, "aset") and async_supervisor_channel()


class CursorStore:
    """The log cursor of one task instance's try, in its XCom ``CURSOR_XCOM_KEY``."""

    def __init__(self, dag_id: str, task_id: str, run_id: str, map_index: int) -> None:
        self.where: dict[str, Any] = {
            "dag_id": dag_id,
            "task_id": task_id,
            "run_id": run_id,
            "map_index": int(map_index),
        }
        self._pending: LogCursor | None = None
        self._writer: asyncio.Task[None] | None = None
        self._warned = False
        #: the cursor last saved (for tests and logs)
        self.saved: LogCursor | None = None
        self.writes = 0

    @classmethod
    def of(cls, trigger: Any) -> CursorStore | None:
        """The store of the task instance the triggerer gave ``trigger``, or None outside a triggerer."""
        ti = getattr(trigger, "task_instance", None)
        dag_id, task_id, run_id = (getattr(ti, name, None) for name in ("dag_id", "task_id", "run_id"))
        if not (isinstance(dag_id, str) and isinstance(task_id, str) and isinstance(run_id, str)):
            return None
        try:
            if not has_supervisor_channel():
                return None
        except ImportError:  # pragma: no cover - a Task SDK without an execution-time module
            return None
        map_index = getattr(ti, "map_index", None)
        return cls(dag_id, task_id, run_id, -1 if map_index is None else int(map_index))

    def _failed(self, what: str, exc: BaseException) -> None:
        level = logging.DEBUG if self._warned else logging.WARNING
        self._warned = True
        log.log(level, "Could not %s the log cursor XCom %s (%r): a restarted triggerer may repeat "
                "lines", what, CURSOR_XCOM_KEY, exc)  # fmt: skip

    async def load(self) -> LogCursor | None:
        """The saved cursor, or None (none saved, or it could not be read)."""
        try:
            xcom = _xcom_class()
            if _async_calls(xcom):
                call = xcom.aget_one(key=CURSOR_XCOM_KEY, **self.where)
            else:
                from asgiref.sync import sync_to_async

                call = sync_to_async(xcom.get_one)(key=CURSOR_XCOM_KEY, **self.where)
            value = await asyncio.wait_for(call, timeout=XCOM_TIMEOUT_S)
        except Exception as exc:
            self._failed("read", exc)
            return None
        if not isinstance(value, dict) or not isinstance(value.get("timestamp"), str):
            return None
        return LogCursor(str(value["timestamp"]), str(value.get("insert_id") or ""))

    def save(self, cursor: LogCursor) -> None:
        """Save ``cursor`` soon (one write in flight; the newest cursor wins)."""
        self._pending = cursor
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_pending())

    async def _write_pending(self) -> None:
        while self._pending is not None:
            cursor, self._pending = self._pending, None
            if cursor == self.saved:
                continue
            value = {"timestamp": cursor.timestamp, "insert_id": cursor.insert_id}
            try:
                xcom = _xcom_class()
                if _async_calls(xcom):
                    call = xcom.aset(CURSOR_XCOM_KEY, value, **self.where)
                else:
                    from asgiref.sync import sync_to_async

                    call = sync_to_async(xcom.set)(CURSOR_XCOM_KEY, value, **self.where)
                await asyncio.wait_for(call, timeout=XCOM_TIMEOUT_S)
            except Exception as exc:
                self._failed("save", exc)
                continue
            self.saved = cursor
            self.writes += 1

    async def flush(self, timeout: float) -> None:
        """Wait (up to ``timeout`` seconds) for the pending save to land."""
        writer = self._writer
        if writer is not None and not writer.done():
            try:
                await asyncio.wait_for(asyncio.shield(writer), timeout=timeout)
            except ASYNC_TIMEOUT:
                pass

    def close(self) -> None:
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()
