"""A full disk under the state directory: Create answers UNAVAILABLE naming it, and a job whose final
state could not be written settles once the disk has room again (core/jobstore.py, runtime/driver.py).

The disk is made full for real, without root: SQLite's ``PRAGMA max_page_count`` set on the store's own
connection to the pages the database has, so the next write that needs a page fails with SQLite's own
``SQLITE_FULL`` ("database or disk is full") in the real store, as on a full filesystem; raising it again
is the space freed. Before, Create answered 500 and the job stayed RUNNING, with no process left, until
a restart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from capacity_support import service_lines, wait_until
from google.api_core import exceptions
from google.cloud.aiplatform_v1 import CustomJob
from probes import JOBS, JSON, PARENT, Http, answer, record

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.runtime.driver import WRITE_RETRY_MAX_S

DEADLINE_S = 60.0
#: the replica's last lines, long enough that the failed job's message needs new database pages
FAIL_LOUDLY = "print(('x' * 3000 + '\\n') * 20, flush=True)\nraise SystemExit(3)"


def _set_max_pages(em: Emulator, pages: int | None) -> None:
    """Cap the job database at ``pages`` (None: the pages it has now), on the store's own connection."""
    store = em.store
    with store._lock:  # the store's one connection: the cap applies to the writes the emulator makes
        db = store._db
        count = pages if pages is not None else int(db.execute("PRAGMA page_count").fetchone()[0])
        db.execute(f"PRAGMA max_page_count = {count}")


@pytest.fixture
def em(tmp_path: Path) -> Iterator[Emulator]:
    with testing.running_emulator(tmp_path / "state") as emulator:
        yield emulator


def _hold_then_fail(flag: Path) -> str:
    return (
        "import os, time\n"
        "end = time.time() + 120\n"
        f"while not os.path.exists({str(flag)!r}) and time.time() < end:\n"
        "    time.sleep(0.05)\n" + FAIL_LOUDLY
    )


def _big_job(name: str) -> dict[str, Any]:
    return testing.container_job(name, "pass  # " + "y" * 20_000)


def test_a_full_disk_answers_unavailable_and_the_job_settles_once_it_has_room(
    em: Emulator, tmp_path: Path
) -> None:
    flag = tmp_path / "go"
    client = testing.grpc_client(em)
    try:
        job = client.create_custom_job(
            parent=PARENT,
            custom_job=CustomJob.from_json(json.dumps(testing.container_job("full", _hold_then_fail(flag)))),
        )
        testing.wait_for_state(client, job.name, ["JOB_STATE_RUNNING"], timeout=DEADLINE_S)
        _set_max_pages(em, None)  # the disk is full from here on
        state_dir = str(em.config.state_dir)

        # Create, on both surfaces: UNAVAILABLE naming the cause and the state directory, never 500
        status, data = Http(em).request("POST", JOBS, json.dumps(_big_job("rest")).encode(), JSON)
        with pytest.raises(exceptions.GoogleAPICallError) as info:
            client.create_custom_job(
                parent=PARENT, custom_job=CustomJob.from_json(json.dumps(_big_job("grpc"))), retry=None
            )
        record(
            "full_disk",
            "the state directory's disk full (SQLite's max_page_count reached) while a job runs and ends",
            f"Create: {answer(status, data)} 'disk full' naming the state directory (was 500 INTERNAL); the "
            "job stayed RUNNING while full and settled with its replica's failure once the disk had room "
            "(was: that write lost, an internal error written instead, or RUNNING until a restart)",
        )
        assert (status, data["error"]["status"]) == (503, "UNAVAILABLE"), data
        assert "disk full" in data["error"]["message"] and state_dir in data["error"]["message"]
        assert isinstance(info.value, exceptions.ServiceUnavailable), info.value
        assert "disk full" in str(info.value.message) and state_dir in str(info.value.message)

        # the replica fails: its job's final state cannot be written while the disk is full
        flag.touch()
        wait_until(
            "the job's final state tried",
            lambda: any(line.get("sev") == "ERROR" for line in service_lines(em, job.name)),
            timeout=DEADLINE_S,
        )
        assert client.get_custom_job(name=job.name).state.name == "JOB_STATE_RUNNING"  # reads still answer

        _set_max_pages(em, 2**30)  # space freed: the job settles, without a restart
        done = testing.wait_for_state(client, job.name, ["JOB_STATE_FAILED"], timeout=DEADLINE_S)
        assert "exited with a non-zero status of 3" in done.error.message
        assert WRITE_RETRY_MAX_S == 2.0  # the longest pause between tries, as docs/emulator.md says
        errors = [line for line in service_lines(em, job.name) if line.get("sev") == "ERROR"]
        assert len(errors) == 1, errors  # the state's lines written once, however many tries it took
        later = client.create_custom_job(
            parent=PARENT, custom_job=CustomJob.from_json(json.dumps(_big_job("later")))
        )
        testing.wait_for_state(client, later.name, ["JOB_STATE_SUCCEEDED"], timeout=DEADLINE_S)
    finally:
        flag.touch()
        client.transport.close()
