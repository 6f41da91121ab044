"""Lines are held back until they settle (`[vertex_dist] log_settle_seconds`), in both streams, on the
emulator: a read leaves out the lines younger than the window, a later read takes them, and a stream
whose job ended waits for the window before its last read.

Cloud Logging can make an entry readable after newer ones; a cursor already past it would never take
it. The emulator never makes a line late, so these tests show the window itself: what a read takes and
when, through the real filter (`timestamp<=`) and the real poller.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

import pytest

from airflow_vertex_dist.hooks.logs import VertexLogsHook
from airflow_vertex_dist.logs.poller import ReadBudget, get_log_poller, settle_seconds, settled_until
from airflow_vertex_dist.logs.worker_stream import LogStreamer
from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, grpc_client, wait_for_state

PROJECT = "test-project"
SETTLE_ENV = "AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS"
#: far longer than any of these tests takes: a line written by one is never settled within it
LONG = "60"  # the most the option allows

#: the replica's own lines: "all" also takes the job's service lines ("Job is running."...)
PRIMARY_ONLY = ["workerpool0-0"]

PRINTER = """
for i in range(3):
    print(f"settle line {i}", flush=True)
"""


def _finished_job(em: Emulator) -> str:
    from google.cloud import aiplatform_v1

    client = grpc_client(em)
    body = container_job("settle", PRINTER)
    job = client.create_custom_job(
        parent=PARENT, custom_job=aiplatform_v1.CustomJob.from_json(json.dumps(body))
    )
    wait_for_state(client, job.name, {"JOB_STATE_SUCCEEDED"})
    return str(job.name.rsplit("/", 1)[-1])


def test_the_window_comes_from_the_config_and_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SETTLE_ENV, raising=False)
    assert settle_seconds() == 2.0
    monkeypatch.setenv(SETTLE_ENV, "0.5")
    assert settle_seconds() == 0.5
    monkeypatch.setenv(SETTLE_ENV, "-1")
    with pytest.raises(ValueError, match="log_settle_seconds: must be between 0 and 60"):
        settle_seconds()
    assert settled_until(0) is None
    assert settled_until(2.0, now=1_767_225_602.5) == "2026-01-01T00:00:00.500000000Z"


def test_a_worker_slot_read_takes_only_settled_lines(em: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    job_id = _finished_job(em)
    hook = VertexLogsHook()
    try:
        monkeypatch.setenv(SETTLE_ENV, LONG)
        held = LogStreamer(hook, job_id, PRIMARY_ONLY, logging.getLogger("test"), min_interval_s=0)
        assert held.poll() == 0  # read, but every line is younger than the window
        monkeypatch.setenv(SETTLE_ENV, "0")
        taken = LogStreamer(hook, job_id, PRIMARY_ONLY, logging.getLogger("test"), min_interval_s=0)
        assert taken.poll() == 3  # the same read without the window takes them
    finally:
        hook.close()


def test_a_worker_slot_stream_of_an_ended_job_waits_out_the_window(
    em: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SETTLE_ENV, "0.5")
    job_id = _finished_job(em)
    hook = VertexLogsHook()
    try:
        streamer = LogStreamer(hook, job_id, PRIMARY_ONLY, logging.getLogger("test"), min_interval_s=0)
        started = time.monotonic()
        assert streamer.poll(force=True) == 3  # the job ended: the window passes, then every line
        assert time.monotonic() - started >= 0.5
    finally:
        hook.close()


def test_the_poller_holds_lines_back_and_reads_through_an_ended_job(
    em: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = _finished_job(em)

    async def held_back() -> tuple[int, bool, float]:
        monkeypatch.setenv(SETTLE_ENV, LONG)
        poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
        sub = poller.subscribe(job_id, selection=PRIMARY_ONLY, interval=0.05)
        try:
            cycles = poller.cycles
            while poller.cycles < cycles + 2:
                await poller.next_cycle()
            through = await poller.read_through(time.time(), timeout=0.3)
            return len(sub.take()), through, poller.horizon
        finally:
            sub.close()

    async def settled() -> tuple[list[str], bool]:
        monkeypatch.setenv(SETTLE_ENV, "0.3")
        poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
        # no cycle of its own for a minute
        sub = poller.subscribe(job_id, selection=PRIMARY_ONLY, interval=60.0)
        try:
            through = await poller.read_through(time.time(), timeout=30)
            return [line.text for line in sub.take()], through
        finally:
            sub.close()

    count, through, horizon = asyncio.run(held_back())
    assert (count, through) == (0, False)  # two cycles read, none took a line: all are too young
    assert horizon < time.time() - 30
    lines, through = asyncio.run(settled())
    assert through and lines == [f"settle line {i}" for i in range(3)]


def _planted(em: Emulator, *, ran: bool) -> str:
    """A job the service ended FAILED (a stockout while PENDING: no ``startTime``; or after it ran),
    written into the emulator's store as the service would hold it."""
    from airflow_vertex_dist.common.rfc3339 import now_rfc3339
    from airflow_vertex_dist.jobs.capacity_messages import stockout_message

    job = em.store.insert("customJobs", PARENT, container_job("never-ran", PRINTER))

    def fail(body: dict[str, Any]) -> None:
        body["state"] = "JOB_STATE_FAILED"
        body["error"] = {"code": 8, "message": stockout_message("us-central1")}
        if ran:
            body["startTime"] = body["updateTime"]
        body["endTime"] = now_rfc3339()

    em.store.update(job["name"], fail)
    return str(job["name"])


@pytest.mark.parametrize("ran", [False, True], ids=["never-ran", "ran"])
def test_a_job_that_never_ran_ends_its_stream_without_a_last_read(
    em: Emulator, monkeypatch: pytest.MonkeyPatch, ran: bool
) -> None:
    """A job that ended before it ran (no ``startTime``: refused capacity or quota while PENDING) had
    no replica to write a line: the trigger's stream neither waits the settle window nor reads once
    more before the event; a job that ran still gets both (the control). The operators' worker-slot
    waits and the sensors skip their last read on the same test (``jobs.kinds.ever_ran``)."""
    from airflow_vertex_dist.logs.trigger_stream import StartingLogStream
    from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

    monkeypatch.setenv(SETTLE_ENV, "0")
    finishes: list[float] = []
    real_finish = StartingLogStream.finish

    async def finish(self: StartingLogStream, timeout: float, closing: Sequence[str] = ()) -> None:
        finishes.append(timeout)
        await real_finish(self, timeout, closing)

    monkeypatch.setattr(StartingLogStream, "finish", finish)
    name = _planted(em, ran=ran)
    trigger = VertexJobTrigger(job_name=name, stream_logs="all", poll_interval=0.2)

    async def first_event() -> dict[str, Any]:
        async for event in trigger.run():
            payload: dict[str, Any] = event.payload
            return payload
        raise AssertionError("no event")

    event = asyncio.run(asyncio.wait_for(first_event(), timeout=60))
    assert event["status"] == "error" and "Resources are insufficient" in event["message"]
    assert len(finishes) == (1 if ran else 0)
