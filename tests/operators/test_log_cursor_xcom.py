"""The log cursor's XCom round trip through Airflow's own supervisor channel, in process.

A trigger reaches its task instance's XComs through the Task SDK's channel to a supervisor; here that
is Airflow's in-process supervisor (the one ``dag.test()`` runs triggers with), built as Airflow's
``InProcessTestSupervisor.run_trigger_in_process`` builds it, against the migrated metadata DB. Its
channel answers sync calls only, so this is the path a triggerer without async XCom calls takes
(``sync_to_async``). The triggerer's own channel is the stack test's
(tests/stack/test_training_logs.py restarts the triggerer mid-stream).
"""

from __future__ import annotations

import asyncio
import types
from datetime import datetime, timezone
from typing import Any

import pytest
from airflow.sdk import DAG, task

from airflow_vertex_dist.logs.cursor import CURSOR_XCOM_KEY, CursorStore
from airflow_vertex_dist.logs.poller import LogCursor
from airflow_vertex_dist.logs.trigger_stream import log_stream_start
from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

from .harness import dag_xcom, run_dag, ti_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

EARLY = LogCursor("2026-01-01T00:00:01.000000001Z", "1.workerpool0-0.000000001")
LATER = LogCursor("2026-01-01T00:00:02.5Z", "1.workerpool0-0.000000007")
LATEST = LogCursor("2026-01-01T00:00:03Z", "1.workerpool1-0.000000002")


def _finished_run() -> Any:
    with DAG("log_cursor_xcom", schedule=None, start_date=datetime(2024, 1, 1, tzinfo=timezone.utc)) as dag:

        @task(task_id="train")
        def train() -> None:
            return None

        train()
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    return dr


def test_the_cursor_is_saved_in_the_tasks_xcom_and_read_back_by_the_next_trigger(
    supervisor_channel: None,
) -> None:
    dr = _finished_run()
    ti = types.SimpleNamespace(dag_id=dr.dag_id, task_id="train", run_id=dr.run_id, map_index=-1)

    def trigger() -> VertexJobTrigger:  # as the triggerer builds it: kwargs, then its task instance
        t = VertexJobTrigger(
            job_name="projects/test-project/locations/us-central1/customJobs/1",
            stream_logs="all",
            log_timestamp=EARLY.timestamp,
            log_insert_id=EARLY.insert_id,
        )
        t.task_instance = ti
        return t

    async def first_triggerer() -> tuple[LogCursor | None, LogCursor | None, int]:
        store = CursorStore.of(trigger())
        assert store is not None
        before = await store.load()
        store.save(LATER)
        store.save(LATEST)  # while the first write is in flight: the newest cursor wins
        await store.flush(timeout=30)
        return before, store.saved, store.writes

    before, saved, writes = asyncio.run(first_triggerer())
    assert before is None
    assert saved == LATEST and 1 <= writes <= 2
    assert dag_xcom(dr, "train", key=CURSOR_XCOM_KEY) == {
        "timestamp": LATEST.timestamp,
        "insert_id": LATEST.insert_id,
    }

    async def second_triggerer() -> LogCursor:
        starting = log_stream_start(trigger())  # its kwargs still say EARLY
        try:
            stream = await starting.started()
            assert stream is not None
            return stream.sub.cursor
        finally:
            starting.close()

    assert asyncio.run(second_triggerer()) == LATEST


def test_a_first_start_reads_the_seeded_cursor_without_an_error(supervisor_channel: None, capfd: Any) -> None:
    """A first start reads the cursor the task seeded before deferring: no ``XCom not found`` ERROR
    (which the Task SDK logs for a missing XCom, as the unseeded task instance shows)."""
    from airflow.sdk import get_current_context

    from airflow_vertex_dist.logs.cursor import seed_cursor

    with DAG("log_cursor_seed", schedule=None, start_date=datetime(2024, 1, 1, tzinfo=timezone.utc)) as dag:

        @task(task_id="seeded")
        def seeded() -> None:
            seed_cursor(get_current_context()["ti"])

        @task(task_id="bare")
        def bare() -> None:
            return None

        seeded()
        bare()
    dr = run_dag(dag)
    capfd.readouterr()

    def first_start(task_id: str) -> tuple[LogCursor | None, str]:
        t = VertexJobTrigger(
            job_name="projects/test-project/locations/us-central1/customJobs/1", stream_logs="all"
        )
        t.task_instance = types.SimpleNamespace(
            dag_id=dr.dag_id, task_id=task_id, run_id=dr.run_id, map_index=-1
        )
        store = CursorStore.of(t)
        assert store is not None
        loaded = asyncio.run(store.load())
        captured = capfd.readouterr()
        return loaded, captured.out + captured.err

    loaded, out = first_start("seeded")
    assert loaded == LogCursor("", "")
    assert "XCom not found" not in out and "error" not in out.lower(), out
    loaded, out = first_start("bare")  # what a first start logged before the seed
    assert loaded is None
    assert "XCom not found" in out
