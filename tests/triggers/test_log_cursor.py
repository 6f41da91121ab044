"""The log cursor kept across triggerer restarts: which cursor wins, and when there is no store.

The store's XCom round trip through a real triggerer is the stack test's
(tests/stack/test_training_logs.py restarts the triggerer mid-stream and counts every line).
"""

from __future__ import annotations

import asyncio
import types

from airflow_vertex_dist.logs.cursor import CursorStore, later
from airflow_vertex_dist.logs.poller import LogCursor
from airflow_vertex_dist.logs.trigger_stream import log_stream_start


def test_the_later_cursor_wins_by_time_then_insert_id() -> None:
    empty = LogCursor()
    a = LogCursor("2026-01-01T00:00:05Z", "9")
    b = LogCursor("2026-01-01T00:00:05.000000001Z", "1")  # a nanosecond later: later despite "1" < "9"
    c = LogCursor("2026-01-01T00:00:05.000000001Z", "2")
    assert later(a, b) == later(b, a) == b
    assert later(b, c) == later(c, b) == c
    assert later(empty, a) == later(a, empty) == a
    assert later(empty, empty) == empty


def test_no_store_without_a_task_instance_or_a_supervisor_channel() -> None:
    from airflow.sdk.execution_time import task_runner

    assert CursorStore.of(types.SimpleNamespace()) is None  # dag.test() builds triggers without a TI
    ti = types.SimpleNamespace(dag_id="d", task_id="t", run_id="r", map_index=2)
    had = hasattr(task_runner, "SUPERVISOR_COMMS")
    saved = getattr(task_runner, "SUPERVISOR_COMMS", None)
    try:
        task_runner.SUPERVISOR_COMMS = None  # type: ignore[attr-defined]
        assert CursorStore.of(types.SimpleNamespace(task_instance=ti)) is None
        task_runner.SUPERVISOR_COMMS = object()  # type: ignore[attr-defined]
        store = CursorStore.of(types.SimpleNamespace(task_instance=ti))
        assert store is not None
        assert store.where == {"dag_id": "d", "task_id": "t", "run_id": "r", "map_index": 2}
    finally:
        if had:
            task_runner.SUPERVISOR_COMMS = saved  # type: ignore[attr-defined]
        else:
            del task_runner.SUPERVISOR_COMMS


def test_a_stream_without_a_store_starts_at_its_kwargs_cursor() -> None:
    from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

    trigger = VertexJobTrigger(
        job_name="projects/p/locations/l/customJobs/1",
        stream_logs="all",
        log_timestamp="2026-01-01T00:00:00Z",
        log_insert_id="7",
    )

    async def run() -> tuple[object, LogCursor]:
        starting = log_stream_start(trigger)
        try:
            stream = await starting.started()
            assert stream is not None
            return stream.store, stream.sub.cursor
        finally:
            starting.close()

    store, cursor = asyncio.run(run())
    assert store is None
    assert cursor == LogCursor("2026-01-01T00:00:00Z", "7")
