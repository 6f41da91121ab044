"""Vertex AI's own ``service`` lines about a job in the emulator's Cloud Logging, read through the stock
google-cloud-logging client over gRPC and HTTP/JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from logging_support import PROJECT, custom, job_filter, logging_client, text_of
from polling import poll_until

from vertex_emulator.testing import PARENT, container_job, grpc_client, running_emulator, wait_for_state

PENDING = [
    "Waiting for job to be provisioned.",
    "Vertex AI is provisioning job running framework. First time usage might take couple of minutes, "
    "and subsequent runs can be much faster.",
    "Vertex AI is setting up this job.",
    "Waiting for training program to start.",
    "Job is preparing.",
    "Job is running.",
]


def _service(em: Any, job_id: str, *, grpc: bool) -> list[Any]:
    client = logging_client(em, grpc=grpc)
    return list(client.list_entries(filter_=job_filter(job_id, 'resource.labels.task_name="service"')))


@pytest.mark.parametrize("grpc", [True, False], ids=["grpc", "http"])
def test_a_job_that_succeeds(tmp_path: Path, grpc: bool) -> None:
    with running_emulator(tmp_path) as em:
        client = grpc_client(em)
        job = client.create_custom_job(parent=PARENT, custom_job=custom(container_job("ok", "print('hi')")))
        wait_for_state(client, job.name, {"JOB_STATE_SUCCEEDED"})
        job_id = job.name.rsplit("/", 1)[-1]
        entries = _service(em, job_id, grpc=grpc)
    assert [text_of(e) for e in entries] == [
        *PENDING,
        "Tearing down training program.",
        "Finished tearing down training program.",
        "Job completed successfully.",
    ]
    assert {e.severity for e in entries} == {"INFO"}
    assert {e.log_name for e in entries} == {f"projects/{PROJECT}/logs/ml.googleapis.com%2F{job_id}"}
    assert all(e.resource.type == "ml_job" and e.resource.labels["job_id"] == job_id for e in entries)
    assert entries[0].labels == {"ml.googleapis.com/endpoint": "", "ml.googleapis.com/job_state": "QUEUED"}
    assert entries[-1].labels == {"ml.googleapis.com/endpoint": ""}


@pytest.mark.parametrize("grpc", [True, False], ids=["grpc", "http"])
def test_a_job_that_fails_says_why_as_an_error(tmp_path: Path, grpc: bool) -> None:
    with running_emulator(tmp_path) as em:
        client = grpc_client(em)
        code = "import sys; print('bad input', file=sys.stderr); sys.exit(3)"
        job = client.create_custom_job(parent=PARENT, custom_job=custom(container_job("bad", code)))
        failed = wait_for_state(client, job.name, {"JOB_STATE_FAILED"})
        entries = _service(em, job.name.rsplit("/", 1)[-1], grpc=grpc)
    assert [text_of(e) for e in entries] == [
        *PENDING,
        failed.error.message,
        "Finished tearing down training program.",
        "Job failed.",
    ]
    assert "exited with a non-zero status of 3" in failed.error.message
    assert [e.severity for e in entries][-3:] == ["ERROR", "INFO", "INFO"]


def test_a_cancelled_job(tmp_path: Path) -> None:
    with running_emulator(tmp_path) as em:
        client = grpc_client(em)
        code = "import time\nprint('up', flush=True)\ntime.sleep(60)"
        job = client.create_custom_job(parent=PARENT, custom_job=custom(container_job("stop", code)))
        job_id = job.name.rsplit("/", 1)[-1]
        running = em.config.state_dir / "logs" / job_id / "workerpool0-0.log"
        poll_until(lambda: running.is_file() and "up" in running.read_text(), timeout=20, interval=0.05)
        client.cancel_custom_job(name=job.name)
        wait_for_state(client, job.name, {"JOB_STATE_CANCELLED"})
        texts = [text_of(e) for e in _service(em, job_id, grpc=True)]
    assert texts == [*PENDING, "Finished tearing down training program.", "Job was cancelled."]


def test_the_default_stream_selection_of_a_failed_job_shows_the_service_error(tmp_path: Path) -> None:
    """A filter like the provider's default stream (the primary's lines or WARNING and up) takes a
    worker's stderr lines (not its stdout) and the service's ERROR line, as it would on Vertex AI."""
    with running_emulator(tmp_path) as em:
        client = grpc_client(em)
        code = (
            "import json, os, sys\n"
            "task = json.loads(os.environ['CLUSTER_SPEC'])['task']\n"
            "print('to stdout', flush=True); print('to stderr', file=sys.stderr, flush=True)\n"
            "if task['type'] == 'workerpool1':\n"
            "    sys.exit(2)\n"
            "import time; time.sleep(30)\n"
        )
        body = container_job("sel", code, workers=1)
        job = client.create_custom_job(parent=PARENT, custom_job=custom(body))
        wait_for_state(client, job.name, {"JOB_STATE_FAILED"})
        job_id = job.name.rsplit("/", 1)[-1]
        selection = '(resource.labels.task_name="workerpool0-0" OR severity>=WARNING)'
        entries = list(logging_client(em, grpc=True).list_entries(filter_=job_filter(job_id, selection)))
    got = {(e.resource.labels["task_name"], text_of(e)) for e in entries}
    assert ("workerpool1-0", "to stderr") in got and ("workerpool1-0", "to stdout") not in got
    assert any(task == "service" and "workerpool1-0 exited" in text for task, text in got)


def test_a_states_lines_are_written_before_jobservice_shows_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that sees a job FAILED finds its ERROR line: the lines of each state are written while
    the store's committed row (what every JobService read returns) still holds the state before it."""
    import sqlite3

    from vertex_emulator.runtime.service_log import ServiceLog

    committed: list[tuple[str, str]] = []  # (state written, state a reader would see at that moment)
    original = ServiceLog.state
    database: list[Path] = []

    def state(self: ServiceLog, state: str, reason: str | None = None) -> None:
        job_id = self.path.parent.name
        db = sqlite3.connect(database[0], timeout=30)  # a reader of its own: sees committed rows only
        try:
            (seen,) = db.execute("SELECT state FROM jobs WHERE name LIKE ?", (f"%/{job_id}",)).fetchone()
        finally:
            db.close()
        committed.append((state, seen))
        original(self, state, reason)

    monkeypatch.setattr(ServiceLog, "state", state)
    with running_emulator(tmp_path) as em:
        database.append(Path(em.config.state_dir) / "jobs.sqlite3")
        client = grpc_client(em)
        code = "import sys; sys.exit(3)"
        job = client.create_custom_job(parent=PARENT, custom_job=custom(container_job("bad", code)))
        wait_for_state(client, job.name, {"JOB_STATE_FAILED"})
    assert [s for s, _ in committed][-2:] == ["JOB_STATE_RUNNING", "JOB_STATE_FAILED"]
    assert all(written != seen for written, seen in committed if written != "JOB_STATE_QUEUED"), committed


def test_service_lines_carry_the_service_time_and_are_served_while_it_runs_ahead(tmp_path: Path) -> None:
    """While a scenario paces the service's clock, the emulator's own lines about a job (a Spot
    preemption's among them) are stamped with the service's time, as the job's times are, and the
    Logging API serves them though that time is ahead of the machine's."""
    from datetime import datetime, timezone

    from vertex_emulator.cloud_logging.api import LogEntriesApi
    from vertex_emulator.core.clock import ServiceClock
    from vertex_emulator.core.jobstore import JobStore
    from vertex_emulator.runtime.service_log import ServiceLog

    real = [100.0]
    clock = ServiceClock(monotonic=lambda: real[0])
    clock.set_compression(3600)
    real[0] += 2.0  # two real seconds: two service hours ahead
    store = JobStore(tmp_path / "jobs.sqlite3", clock=clock)
    try:
        job = store.insert("customJobs", "projects/test-project/locations/us-central1", {"displayName": "s"})
        job_id = job["name"].rsplit("/", 1)[-1]
        ServiceLog(tmp_path / "logs" / job_id, clock).preempted("workerpool0-0", 1, 6)
        entries = LogEntriesApi(store, tmp_path).list_entries(["projects/test-project"])["entries"]
    finally:
        store.close()
    [entry] = entries
    assert "was preempted" in str(entry)
    stamp = datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00"))
    ahead = (stamp - datetime.now(timezone.utc)).total_seconds()
    assert 2 * 3600 - 2 - 60 < ahead < 2 * 3600
