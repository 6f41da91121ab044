"""VertexLogsHook against the emulator's Logging API, over gRPC and REST, with the stock clients."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_vertex_dist.hooks.logs import VertexLogsHook, jobs_filter, replicas_clause
from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, grpc_client, wait_for_state

# Every replica prints its steps and leaves a mark; workerpool1-1 waits for the others' marks, warns
# and errs on stderr (ERROR in Cloud Logging, as on Vertex AI) and exits 1 (failing the job); the
# others wait for the job to stop them.
TRAINER = """
import json, os, pathlib, sys, time
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
me = f"{task['type']}-{task['index']}"
shared = pathlib.Path(SHARED)
for step in range(3):
    print(f"{me} step {step}")
(shared / me).touch()
deadline = time.monotonic() + 30
if me == "workerpool1-1":
    while len(list(shared.iterdir())) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    print("WARNING: disk almost full", file=sys.stderr)
    print("ERROR: shard 7 is corrupt", file=sys.stderr)
    sys.exit(1)
while time.monotonic() < deadline:
    time.sleep(0.05)
"""


@pytest.fixture(scope="module")
def job_id(emulator: Emulator, tmp_path_factory: pytest.TempPathFactory) -> str:
    from google.cloud import aiplatform_v1

    code = f"SHARED = {str(tmp_path_factory.mktemp('marks'))!r}" + TRAINER
    client = grpc_client(emulator)
    body = aiplatform_v1.CustomJob.from_json(json.dumps(container_job("logs", code, workers=2)))
    job = client.create_custom_job(parent=PARENT, custom_job=body)
    wait_for_state(client, job.name, {"JOB_STATE_FAILED"})
    return str(job.name.rsplit("/", 1)[-1])


def _texts(lines: list[Any]) -> list[tuple[str, str]]:
    return [(line.key, line.text) for line in lines]


def test_read_lines_all_replicas_in_order(transport: str, job_id: str) -> None:
    hook = VertexLogsHook()
    try:
        lines = hook.read_lines([job_id])
    finally:
        hook.close()
    by_key: dict[str, list[str]] = {}
    for line in lines:
        assert line.job_id == job_id
        by_key.setdefault(line.key, []).append(line.text)
    assert by_key["workerpool0-0"] == [f"workerpool0-0 step {i}" for i in range(3)]
    assert by_key["workerpool1-1"][-2:] == ["WARNING: disk almost full", "ERROR: shard 7 is corrupt"]
    assert len({line.insert_id for line in lines}) == len(lines)


def test_default_selection_is_primary_plus_warnings(transport: str, job_id: str) -> None:
    hook = VertexLogsHook()
    try:
        lines = hook.read_lines([job_id], selection="default")
    finally:
        hook.close()
    assert {line.key for line in lines if line.severity == "INFO"} == {"workerpool0-0"}
    assert ("workerpool1-1", "ERROR: shard 7 is corrupt") in _texts(lines)
    assert [line.severity for line in lines if line.key == "workerpool1-1"] == ["ERROR", "ERROR"]
    assert [line.text for line in lines if line.key == "service"][-1].startswith("The replica workerpool1-1")


def test_pages_join_without_loss_or_repeat(grpc_conn: str, job_id: str) -> None:
    hook = VertexLogsHook()
    try:
        text = jobs_filter([job_id])
        everything, _ = hook.list_page(text)
        seen: list[str] = []
        token = ""
        while True:
            page, token = hook.list_page(text, page_size=2, page_token=token)
            seen.extend(line.insert_id for line in page)
            if not token:
                break
    finally:
        hook.close()
    assert seen == [line.insert_id for line in everything]


def test_tail_gives_the_last_lines_oldest_first(transport: str, job_id: str) -> None:
    hook = VertexLogsHook()
    try:
        tail = hook.tail(job_id, "workerpool1-1", lines=2)
    finally:
        hook.close()
    assert [line.text for line in tail] == ["WARNING: disk almost full", "ERROR: shard 7 is corrupt"]


def test_a_json_payload_entry_reads_its_message() -> None:
    """Vertex AI logs a replica's line as ``jsonPayload`` (``message``, ``levelname``, ``attrs``); the
    generated clients (gRPC, and the REST page parsed by the library's types) hand it over as a
    proto-plus entry whose Struct is a mapping."""
    from google.cloud.logging_v2.types import LogEntry

    from airflow_vertex_dist.hooks.logs import line_from_entry

    entry = LogEntry(
        json_payload={"message": "step 1", "levelname": "ERROR", "attrs": {"tag": "workerpool0-0"}},
        severity=500,
        resource={"type": "ml_job", "labels": {"job_id": "7", "task_name": "workerpool0-0"}},
        insert_id="i",
        timestamp={"seconds": 1_767_225_600},
    )
    line = line_from_entry(entry)
    assert (line.text, line.severity, line.replica) == ("step 1", "ERROR", "workerpool0-0")
    no_message = LogEntry(
        json_payload={"loss": 0.5}, resource={"type": "ml_job"}, timestamp={"seconds": 1_767_225_600}
    )
    assert line_from_entry(no_message).text == '{"loss": 0.5}'


@pytest.mark.parametrize(
    ("selection", "message"),
    [([], "an empty list of replica keys"), ("primary", "must be 'all', a list of replica keys or False")],
)
def test_bad_selection_names_stream_logs(selection: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        replicas_clause(selection)


def test_filter_text() -> None:
    assert jobs_filter(["2", "1"], since="2026-01-01T00:00:00Z", selection=["workerpool1-0"]) == (
        'resource.type="ml_job" AND (resource.labels.job_id="1" OR resource.labels.job_id="2") '
        'AND timestamp>="2026-01-01T00:00:00Z" AND (resource.labels.task_name="workerpool1-0")'
    )


def test_entry_timestamps_keep_nanoseconds_and_plain_datetimes_are_written_in_utc() -> None:
    from datetime import datetime, timedelta, timezone

    from google.api_core.datetime_helpers import DatetimeWithNanoseconds

    from airflow_vertex_dist.hooks.logs import _rfc3339

    nanos = DatetimeWithNanoseconds(2026, 1, 2, 3, 4, 5, nanosecond=123456789, tzinfo=timezone.utc)
    assert _rfc3339(nanos) == "2026-01-02T03:04:05.123456789Z"
    plus_two = datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    assert _rfc3339(plus_two) == "2026-01-02T03:04:05.000000Z"
