"""Finding 6 of issue 37: one job's big lines stopped every job's log streaming.

40 lines of 250 KiB made a Logging page of about 10 MB, over gRPC's 4 MiB receive limit: the shared
log poller retried that page forever, so no deferred task sharing the poller got a line (and a failed
job's quote came 300 s late). The poller now reads such a page again at half the size until it fits
(``logs/pages.py``; the emulator is made to answer as a service with no byte bound on its pages), and
each job has a budget of bytes per cycle, so a job with a backlog of big lines cannot hold back the
lines of the others.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stack.figures import Figures

from airflow_vertex_dist.logs.poller import ReadBudget, get_log_poller
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.runtime.log_records import records_path
from vertex_emulator.runtime.replica_output import RecordLog
from vertex_emulator.testing import PARENT

PROJECT = PARENT.split("/")[1]
BIG = 250 * 1024


def job_with_lines(em: Emulator, lines: list[str]) -> str:
    """A job of ``em`` whose primary printed ``lines`` (written where its supervisor writes them)."""
    job = em.store.insert("customJobs", PARENT, {"displayName": "lines"})
    job_id = str(job["name"]).rsplit("/", 1)[-1]
    folder = Path(em.config.state_dir) / "logs" / job_id
    folder.mkdir(parents=True)
    log = RecordLog(str(records_path(folder, "workerpool0-0")))
    log.append("stdout", lines)
    log.close()
    return job_id


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with testing.running_emulator(Path(tmp_path_factory.mktemp("emulator"))) as running:
        yield running


@pytest.fixture
def em(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Emulator:
    """The emulator, as the default connection over gRPC."""
    extra = {
        "project": PROJECT,
        "location": "us-central1",
        "api_endpoint": emulator.grpc_target,
        "emulator": True,
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT", json.dumps({"conn_type": "vertex_dist", "extra": extra})
    )
    return emulator


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS", "0")


async def stream(job_ids: list[str], want: dict[str, int], timeout: float) -> list[tuple[str, str]]:
    """(job id, line) in the order one shared poller hands them out, until each job has ``want``."""
    poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
    subs = {job_id: poller.subscribe(job_id, selection="all", interval=0.05) for job_id in job_ids}
    got: list[tuple[str, str]] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        while loop.time() < deadline:
            for job_id, sub in subs.items():
                got += [(job_id, line.text) for line in sub.take()]
            if all(sum(1 for j, _ in got if j == job_id) >= n for job_id, n in want.items()):
                break
            await asyncio.sleep(0.05)  # the poller's cycles run meanwhile
    finally:
        for sub in subs.values():
            sub.close()
    return got


@pytest.mark.usefixtures("settled")
def test_a_page_over_the_transport_limit_is_read_smaller_and_the_other_job_gets_its_lines(
    em: Emulator,
) -> None:
    em.logs.max_page_bytes = 1 << 40  # as a service that bounds its pages by entries only
    try:
        noisy = job_with_lines(em, [f"{i:03d}" + "x" * (BIG - 3) for i in range(40)])
        quiet = job_with_lines(em, [f"quiet {i}" for i in range(5)])
        started = time.monotonic()
        got = asyncio.run(stream([noisy, quiet], {noisy: 40, quiet: 5}, timeout=60))
    finally:
        em.logs.max_page_bytes = type(em.logs)(em.store, Path(em.config.state_dir)).max_page_bytes
    assert [text for job, text in got if job == quiet] == [f"quiet {i}" for i in range(5)]
    assert [text[:3] for job, text in got if job == noisy] == [f"{i:03d}" for i in range(40)]
    took = time.monotonic() - started
    assert took < 60
    Figures.record(
        "security_probes",
        "log_starvation",
        {
            "input": "one shared log poller: a job's 40 lines of 250 KiB (one 10 MB page) and "
            "another job's 5 lines, from a Logging API with no byte bound on its pages",
            "answer": f"every line of both jobs in {took:.0f} s (was: the page retried forever, the other "
            "job got no line)",
        },
    )


@pytest.mark.usefixtures("settled")
def test_a_job_with_a_backlog_of_big_lines_does_not_hold_back_another_jobs_lines(em: Emulator) -> None:
    noisy = job_with_lines(em, [f"{i:03d}" + "x" * (BIG - 3) for i in range(120)])  # 30 MB: 15 pages
    quiet = job_with_lines(em, [f"quiet {i}" for i in range(5)])  # stamped after all of them

    async def first_cycle() -> tuple[int, list[str]]:
        poller = get_log_poller(PROJECT, budget=ReadBudget(6000))
        subs = [poller.subscribe(job_id, selection="all", interval=60) for job_id in (noisy, quiet)]
        try:
            await asyncio.wait_for(poller.next_cycle(), timeout=60)
            return len(subs[0].take()), [line.text for line in subs[1].take()]
        finally:
            for sub in subs:
                sub.close()

    noisy_lines, quiet_lines = asyncio.run(first_cycle())
    # the first cycle hands out the quiet job's lines though most of the noisy job's are still to come
    assert quiet_lines == [f"quiet {i}" for i in range(5)], noisy_lines
    assert 0 < noisy_lines < 120


def test_a_failed_jobs_quote_of_big_lines_comes_at_once(em: Emulator) -> None:
    from airflow_vertex_dist.hooks.logs import VertexLogsHook

    em.logs.max_page_bytes = 1 << 40  # as a service that bounds its pages by entries only
    try:
        job_id = job_with_lines(em, [f"{i:03d}" + "x" * (BIG - 3) for i in range(40)])
        hook = VertexLogsHook(project_id=PROJECT)
        started = time.monotonic()
        tail = hook.tail(job_id, "workerpool0-0", lines=20)
        hook.close()
    finally:
        em.logs.max_page_bytes = type(em.logs)(em.store, Path(em.config.state_dir)).max_page_bytes
    assert tail and tail[-1].text[:3] == "039"
    assert time.monotonic() - started < 30
