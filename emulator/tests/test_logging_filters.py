"""Logging query language in the emulator's entries.list, through the stock google-cloud-logging
client over gRPC and HTTP/JSON: value groups, case-insensitive comparisons, ``log_id()``, nested
``jsonPayload`` keys, comments, and a 400 naming what is not supported (never a silent empty match).
The grammar itself: test_log_filter.py."""

from __future__ import annotations

import re
from typing import Any

import pytest
from logging_support import custom, job_filter, logging_client, text_of

from vertex_emulator.testing import PARENT, container_job, grpc_client, running_emulator, wait_for_state

TRAINER = """
import json, os, pathlib, sys, time
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
me = f"{task['type']}-{task['index']}"
print(f"{me} Step One", flush=True)
print(f"{me} complains", file=sys.stderr, flush=True)
marks = pathlib.Path(MARKS)
(marks / me).touch()
deadline = time.monotonic() + 30
while me == "workerpool0-0" and len(list(marks.iterdir())) < 3 and time.monotonic() < deadline:
    time.sleep(0.02)
"""
TRANSPORTS = pytest.mark.parametrize("grpc", [True, False], ids=["grpc", "http"])


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running_emulator(tmp_path_factory.mktemp("filters")) as em:
        client = grpc_client(em)
        code = f"MARKS = {str(tmp_path_factory.mktemp('marks'))!r}" + TRAINER
        job = client.create_custom_job(parent=PARENT, custom_job=custom(container_job("f", code, workers=2)))
        wait_for_state(client, job.name, {"JOB_STATE_SUCCEEDED"})
        yield em, job.name.rsplit("/", 1)[-1]


def _read(finished: Any, grpc: bool, extra: str) -> list[tuple[str, str]]:
    em, job_id = finished
    entries = logging_client(em, grpc=grpc).list_entries(filter_=job_filter(job_id, extra))
    return [(e.resource.labels["task_name"], text_of(e)) for e in entries]


@TRANSPORTS
def test_a_value_group_matches_any_of_its_values(finished: Any, grpc: bool) -> None:
    got = _read(finished, grpc, 'resource.labels.task_name=("workerpool0-0" OR "workerpool1-1")')
    assert {task for task, _ in got} == {"workerpool0-0", "workerpool1-1"}
    assert len(got) == 4
    assert _read(finished, grpc, "resource.labels.task_name=(workerpool1-0 AND workerpool1-1)") == []
    got = _read(
        finished, grpc, "resource.labels.task_name:(workerpool1 AND NOT 1-1) severity=(ERROR OR WARNING)"
    )
    assert got == [("workerpool1-0", "workerpool1-0 complains")]


@TRANSPORTS
def test_string_comparisons_ignore_case(finished: Any, grpc: bool) -> None:
    assert _read(finished, grpc, 'resource.labels.task_name="WORKERPOOL1-0" severity=info') == [
        ("workerpool1-0", "workerpool1-0 Step One")
    ]
    assert _read(finished, grpc, 'jsonPayload.message="WORKERPOOL1-1 STEP ONE"') == [
        ("workerpool1-1", "workerpool1-1 Step One")
    ]
    assert len(_read(finished, grpc, 'resource.type="ML_JOB" jsonPayload.message:"step one"')) == 3


@TRANSPORTS
def test_log_id_names_a_replica_or_the_service_log(finished: Any, grpc: bool) -> None:
    _, job_id = finished
    assert {task for task, _ in _read(finished, grpc, 'log_id("workerpool1-1")')} == {"workerpool1-1"}
    service = _read(finished, grpc, f'log_id("ml.googleapis.com/{job_id}")')
    assert service and {task for task, _ in service} == {"service"}
    assert service[-1][1] == "Job completed successfully."


@TRANSPORTS
def test_nested_json_payload_keys_and_comments(finished: Any, grpc: bool) -> None:
    got = _read(
        finished, grpc, '-- the tag Vertex AI puts on a replica line\njsonPayload.attrs.tag="workerpool0-0"'
    )
    assert got == [("workerpool0-0", "workerpool0-0 Step One"), ("workerpool0-0", "workerpool0-0 complains")]


@TRANSPORTS
@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("sample(insertId, 0.5)", "sample() is not supported"),
        ('SEARCH("step")', "SEARCH() is not supported"),
        ('jsonPayload.message=~"Step.*"', "regular expressions"),
    ],
)
def test_what_is_not_supported_is_a_400_naming_it(finished: Any, grpc: bool, extra: str, needle: str) -> None:
    from google.api_core import exceptions

    with pytest.raises((exceptions.InvalidArgument, exceptions.BadRequest), match=re.escape(needle)):
        _read(finished, grpc, extra)
