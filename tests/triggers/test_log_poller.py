"""The shared log poller against the emulator: one read per interval for all streaming jobs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from airflow_vertex_dist.logs import poller as log_poller
from airflow_vertex_dist.logs.poller import LogCursor, ReadBudget, get_log_poller
from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, grpc_client, wait_for_state

PROJECT = "test-project"
#: the replica's own lines: "all" also takes the job's service lines ("Waiting for job to be
#: provisioned.", "Job is running."...), which Vertex AI and the emulator log under task "service"
PRIMARY_ONLY = ["workerpool0-0"]

# Prints `count` numbered lines, the last one as a warning, then exits 0.
PRINTER = """
import os
for i in range({count}):
    print(("WARNING: " if i == {count} - 1 else "") + f"{name} line {{i}}")
"""


def _finished_job(em: Emulator, name: str, count: int) -> str:
    from google.cloud import aiplatform_v1

    client = grpc_client(em)
    body = container_job(name, PRINTER.format(count=count, name=name))
    job = client.create_custom_job(
        parent=PARENT, custom_job=aiplatform_v1.CustomJob.from_json(json.dumps(body))
    )
    wait_for_state(client, job.name, {"JOB_STATE_SUCCEEDED"})
    return str(job.name.rsplit("/", 1)[-1])


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_vertex_dist.hooks.connection import RetryPolicy

    monkeypatch.setattr(log_poller, "PAGE_SIZE", 7)
    monkeypatch.setattr(
        log_poller,
        "LOG_POLLER_RETRY",
        RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=0.2, rpc_timeout_s=5),
    )


async def _collect(sub: Any, want: int, timeout: float = 20.0) -> list[Any]:
    lines: list[Any] = []
    deadline = asyncio.get_running_loop().time() + timeout
    while len(lines) < want and asyncio.get_running_loop().time() < deadline:
        lines.extend(await sub.wait(timeout=0.5))
    return lines


def test_one_read_per_cycle_for_many_jobs_paged_without_repeats(em: Emulator, fast: None) -> None:
    ids = [_finished_job(em, f"job{i}", 10) for i in range(3)]

    async def run() -> tuple[dict[str, list[str]], int, int]:
        poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
        subs = {job_id: poller.subscribe(job_id, selection=PRIMARY_ONLY, interval=0.05) for job_id in ids}
        got = {job_id: [line.text for line in await _collect(sub, 10)] for job_id, sub in subs.items()}
        before = em.logs.calls
        cycles = poller.cycles
        await poller.next_cycle()
        await poller.next_cycle()
        calls = em.logs.calls - before
        done = poller.cycles - cycles
        for sub in subs.values():
            sub.close()
        return got, calls, done

    got, calls, cycles = asyncio.run(run())
    for i, job_id in enumerate(ids):
        assert got[job_id] == [f"{'WARNING: ' if n == 9 else ''}job{i} line {n}" for n in range(10)]
    # 30 lines, 7 a page: once caught up, each cycle is one call (the cursor bounds the read)
    assert calls <= cycles + 1


def test_a_resumed_cursor_repeats_nothing(em: Emulator, fast: None) -> None:
    job_id = _finished_job(em, "resume", 6)

    async def run() -> tuple[list[str], list[str]]:
        poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
        sub = poller.subscribe(job_id, selection=PRIMARY_ONLY, interval=0.05)
        first = await _collect(sub, 6)
        sub.close()
        cursor = LogCursor.of(first[2])  # as if the trigger had stopped after the third line
        poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
        again = poller.subscribe(job_id, selection=PRIMARY_ONLY, cursor=cursor, interval=0.05)
        rest = await _collect(again, 3)
        await poller.next_cycle()
        rest += again.take()
        again.close()
        return [line.text for line in first], [line.text for line in rest]

    first, rest = asyncio.run(run())
    assert rest == first[3:]


def test_a_replica_list_takes_only_those_replicas(
    em: Emulator, fast: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No settle window: the cycles below read the job's lines now (with the 2 s default they would end
    # inside the window, read nothing, and the test would pass whatever the selection did).
    monkeypatch.setenv("AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS", "0")
    job_id = _finished_job(em, "sel", 3)

    async def run() -> tuple[list[str], list[Any], list[Any]]:
        poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
        # Alone, the selection is in the filter; beside another selection the read takes every
        # replica's lines and the poller hands each subscriber only those its selection takes.
        alone = poller.subscribe(job_id, selection=["workerpool1-0"], interval=0.05)
        await poller.next_cycle()
        await poller.next_cycle()
        alone_lines = alone.take()
        beside = poller.subscribe(job_id, selection=["workerpool1-0"], interval=0.05)
        primary = poller.subscribe(job_id, selection=PRIMARY_ONLY, interval=0.05)
        read = [line.text for line in await _collect(primary, 3)]
        await poller.next_cycle()
        beside_lines = beside.take() + alone.take()
        for sub in (alone, beside, primary):
            sub.close()
        return read, alone_lines, beside_lines

    read, alone_lines, beside_lines = asyncio.run(run())
    assert read == ["sel line 0", "sel line 1", "WARNING: sel line 2"]  # the cycles did read the job
    assert alone_lines == [] and beside_lines == []  # a single-replica job has no workerpool1-0


def test_resource_exhausted_backs_off_and_recovers(em: Emulator, fast: None) -> None:
    job_id = _finished_job(em, "quota", 2)
    em.config.faults.error_rate = {"ListLogEntries": 1.0}
    em.config.faults.error_codes = ["RESOURCE_EXHAUSTED"]

    async def run() -> tuple[int, list[str]]:
        poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
        sub = poller.subscribe(job_id, selection=PRIMARY_ONLY, interval=0.02)
        await poller.next_cycle()
        failures = poller.failures
        em.config.faults.error_rate = {}
        lines = await _collect(sub, 2)
        sub.close()
        return failures, [line.text for line in lines]

    failures, lines = asyncio.run(run())
    assert failures >= 1
    assert lines == ["quota line 0", "WARNING: quota line 1"]


def test_default_selection_takes_the_primary_and_every_replicas_warnings() -> None:
    from airflow_vertex_dist.hooks.logs import LogLine
    from airflow_vertex_dist.logs.poller import selection_takes

    def line(replica: str, severity: str) -> LogLine:
        return LogLine("1", replica, None, severity, "2026-01-01T00:00:00Z", "i", "x")

    assert selection_takes("default", line("workerpool0-0", "INFO"))
    assert not selection_takes("default", line("workerpool1-3", "INFO"))
    assert selection_takes("default", line("workerpool1-3", "WARNING"))
    assert selection_takes("default", line("workerpool2-0", "ERROR"))
    assert selection_takes("all", line("workerpool2-0", "DEBUG"))
    assert selection_takes(["workerpool2-0"], line("workerpool2-0", "DEBUG"))
    assert not selection_takes(["workerpool2-0"], line("workerpool0-0", "ERROR"))


def test_budget_spaces_reads() -> None:
    async def run() -> float:
        budget = ReadBudget(600)  # one read per 0.1 s
        loop = asyncio.get_running_loop()
        start = loop.time()
        for _ in range(4):
            await budget.acquire()
        return loop.time() - start

    assert asyncio.run(run()) >= 0.3
    with pytest.raises(ValueError, match="log_reads_per_minute"):
        ReadBudget(0)


def test_module_imports_no_google_cloud(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys, airflow_vertex_dist.logs.poller\n"
        "print(sorted(m for m in sys.modules if m.startswith('google.cloud.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_job_trigger_carries_its_log_settings_and_cursor() -> None:
    from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

    trigger = VertexJobTrigger(
        job_name="projects/p/locations/l/customJobs/1",
        stream_logs=["workerpool1-0"],
        log_timestamp="2026-01-01T00:00:00.000000001Z",
        log_insert_id="1.workerpool1-0.000000003",
    )
    path, kwargs = trigger.serialize()
    assert kwargs["stream_logs"] == ["workerpool1-0"]
    assert (kwargs["log_timestamp"], kwargs["log_insert_id"]) == (
        "2026-01-01T00:00:00.000000001Z",
        "1.workerpool1-0.000000003",
    )
    assert VertexJobTrigger(**json.loads(json.dumps(kwargs))).serialize() == (path, kwargs)


def test_the_budget_comes_from_the_providers_config_section(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_vertex_dist.logs.poller import process_budget

    monkeypatch.setenv("AIRFLOW__VERTEX_DIST__LOG_READS_PER_MINUTE", "600")

    async def spacing() -> float:
        return process_budget().spacing

    assert asyncio.run(spacing()) == pytest.approx(0.1)


def test_a_worker_slot_wait_reads_at_most_once_per_min_interval(
    em: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    from airflow_vertex_dist.hooks.logs import VertexLogsHook
    from airflow_vertex_dist.logs.worker_stream import LogStreamer

    monkeypatch.setenv("AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS", "0")  # the pacing alone (settling:
    # test_log_settle.py)
    job_id = _finished_job(em, "paced", 2)
    hook = VertexLogsHook()
    try:
        streamer = LogStreamer(hook, job_id, PRIMARY_ONLY, logging.getLogger("test"), min_interval_s=60)
        before = em.logs.calls
        assert streamer.poll() == 2
        assert streamer.poll() == 0  # within the interval: no read
        assert em.logs.calls - before == 1
        assert streamer.poll(force=True) == 0  # forced: reads, nothing new
        assert em.logs.calls - before == 2
    finally:
        hook.close()


def test_a_sensor_that_streamed_in_its_first_poke_hands_its_cursor_to_its_trigger(em: Emulator) -> None:
    from airflow_vertex_dist.sensors.jobs import VertexJobSensor

    job_id = _finished_job(em, "handover", 3)
    name = f"{PARENT}/customJobs/{job_id}"
    sensor = VertexJobSensor(task_id="watch", job_name=name, stream_logs=PRIMARY_ONLY)
    sensor._stream_lines(force=True)  # what the first poke does before the sensor defers
    last = sensor._streamer.cursor
    assert last.insert_id.endswith(".workerpool0-0.000000003")  # the third (last) line
    kwargs = sensor.make_trigger(name).serialize()[1]
    assert (kwargs["log_timestamp"], kwargs["log_insert_id"]) == (last.timestamp, last.insert_id)
    assert sensor._streamer is None  # its reader is closed; the trigger streams from here on


def test_the_settle_window_is_at_most_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_vertex_dist.logs.poller import settle_seconds

    monkeypatch.setenv("AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS", "60")
    assert settle_seconds() == 60.0
    monkeypatch.setenv("AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS", "60.5")
    with pytest.raises(ValueError, match="between 0 and 60"):
        settle_seconds()


def test_a_new_subscriber_reads_its_job_from_the_start_beside_a_caught_up_one(
    em: Emulator, fast: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read starts at the oldest position of its subscribers, and a subscriber with none yet has
    read nothing: the newcomer's job's older lines are read, not skipped past the other's position."""
    monkeypatch.setenv("AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS", "0")
    older = _finished_job(em, "older", 3)
    newer = _finished_job(em, "newer", 3)

    async def run() -> tuple[list[str], list[str]]:
        poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
        first = poller.subscribe(newer, selection=PRIMARY_ONLY, interval=0.05)
        caught_up = [line.text for line in await _collect(first, 3)]
        second = poller.subscribe(older, selection=PRIMARY_ONLY, interval=0.05)
        late = [line.text for line in await _collect(second, 3, timeout=10.0)]
        first.close()
        second.close()
        return caught_up, late

    caught_up, late = asyncio.run(run())
    assert caught_up == ["newer line 0", "newer line 1", "WARNING: newer line 2"]
    assert late == ["older line 0", "older line 1", "WARNING: older line 2"]


def test_reading_through_waits_out_the_window_then_reads_once(
    em: Emulator, fast: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read_through`` sleeps out the settle window and then starts one cycle: it does not spend the
    read budget on cycles that cannot yet reach the time asked for."""
    import time

    monkeypatch.setenv("AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS", "0.5")

    async def run() -> tuple[bool, int]:
        poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
        sub = poller.subscribe("1234567890", selection=PRIMARY_ONLY, interval=60)
        await poller.next_cycle()
        before = poller.read_calls
        through = await poller.read_through(time.time(), timeout=10)
        calls = poller.read_calls - before
        sub.close()
        return through, calls

    through, calls = asyncio.run(run())
    assert through
    assert calls <= 2
