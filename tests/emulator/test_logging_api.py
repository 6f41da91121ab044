"""The emulator's Cloud Logging read API, through the stock google-cloud-logging clients."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from vertex_emulator.app import Emulator
from vertex_emulator.testing import (
    PARENT,
    container_job,
    grpc_client,
    running_emulator,
    tuning_job,
    wait_for_state,
)

PROJECT = PARENT.split("/")[1]
ENDED = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}

# Every replica prints, then leaves a mark; the primary ends the job (exit 0) once all three have
# marked, the workers wait to be stopped.
TRAINER = """
import json, os, pathlib, time
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
me = f"{task['type']}-{task['index']}"
for step in range(5):
    print(f"{task['type']} step {step}")
print('{"severity": "WARNING", "message": "structured warning"}')
if task["type"] == "workerpool1":
    print("WARNING: worker warning")
    try:
        raise ValueError("boom")
    except ValueError:
        import traceback; traceback.print_exc()
shared = pathlib.Path(SHARED)
(shared / me).touch()
deadline = time.monotonic() + 30
while time.monotonic() < deadline and (me != "workerpool0-0" or len(list(shared.iterdir())) < 3):
    time.sleep(0.02)
"""


def _custom(body: dict[str, Any]) -> Any:
    from google.cloud import aiplatform_v1

    return aiplatform_v1.CustomJob.from_json(json.dumps(body))


def _gapic(em: Emulator) -> Any:
    import grpc
    from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
    from google.cloud.logging_v2.services.logging_service_v2.transports.grpc import (
        LoggingServiceV2GrpcTransport,
    )

    return LoggingServiceV2Client(
        transport=LoggingServiceV2GrpcTransport(channel=grpc.insecure_channel(em.grpc_target))
    )


def _rest_client(em: Emulator) -> Any:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import logging as cloud_logging

    return cloud_logging.Client(
        project=PROJECT,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        _use_grpc=False,
        client_options={"api_endpoint": em.rest_endpoint},
    )


def _post(em: Emulator, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        em.rest_endpoint + "/v2/entries:list",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One finished CustomJob (primary + 2 workers) on a running emulator."""
    with running_emulator(tmp_path_factory.mktemp("logging")) as em:
        client = grpc_client(em)
        code = f"SHARED = {str(tmp_path_factory.mktemp('marks'))!r}" + TRAINER
        job = client.create_custom_job(
            parent=PARENT, custom_job=_custom(container_job("logs", code, workers=2))
        )
        wait_for_state(client, job.name, ENDED)
        yield em, job.name.rsplit("/", 1)[-1]


def test_grpc_pages_return_every_line_once_in_order_per_replica(finished: Any) -> None:
    em, job_id = finished
    pager = _gapic(em).list_log_entries(
        request={
            "resource_names": [f"projects/{PROJECT}"],
            "filter": f'resource.type="ml_job" AND resource.labels.job_id="{job_id}"',
            "page_size": 3,
        }
    )
    entries = list(pager)
    by_replica: dict[str, list[str]] = {}
    for entry in entries:
        assert entry.resource.type == "ml_job"
        assert entry.resource.labels["project_id"] == PROJECT
        assert entry.resource.labels["job_id"] == job_id
        assert entry.log_name == f"projects/{PROJECT}/logs/{entry.resource.labels['task_name']}"
        by_replica.setdefault(entry.resource.labels["task_name"], []).append(
            entry.text_payload or entry.json_payload["message"]
        )
    assert sorted(by_replica) == ["workerpool0-0", "workerpool1-0", "workerpool1-1"]
    for key, lines in by_replica.items():
        steps = [line for line in lines if " step " in line]
        assert steps == [line for line in steps if line.endswith(tuple("01234"))]
        assert [line.rsplit(" ", 1)[-1] for line in steps] == ["0", "1", "2", "3", "4"], key
    ids = [entry.insert_id for entry in entries]
    assert len(ids) == len(set(ids))
    stamps = [entry.timestamp for entry in entries]
    assert stamps == sorted(stamps)


def test_severities_as_vertex_gives_them(finished: Any) -> None:
    em, job_id = finished
    entries = list(
        _gapic(em).list_log_entries(
            request={"resource_names": [f"projects/{PROJECT}"], "filter": f"resource.labels.job_id={job_id}"}
        )
    )
    severity = {
        (e.resource.labels["task_name"], e.text_payload or e.json_payload["message"]): e.severity
        for e in entries
    }
    info, warning, error = 200, 400, 500  # google.logging.type.LogSeverity
    assert severity[("workerpool0-0", "workerpool0 step 0")] == info
    assert severity[("workerpool0-0", "structured warning")] == warning
    assert severity[("workerpool1-0", "WARNING: worker warning")] == warning
    assert severity[("workerpool1-0", "Traceback (most recent call last):")] == error
    frames = [
        level
        for (key, line), level in severity.items()
        if key == "workerpool1-0" and line.startswith("  File")
    ]
    assert frames and set(frames) == {error}
    assert severity[("workerpool1-0", "ValueError: boom")] == error


def test_rest_client_filters_severity_time_and_not(finished: Any) -> None:
    em, job_id = finished
    client = _rest_client(em)
    warnings = list(client.list_entries(filter_=f'resource.labels.job_id="{job_id}" severity>=WARNING'))
    assert warnings and all(e.severity in ("WARNING", "ERROR") for e in warnings)
    assert any(e.payload == "ValueError: boom" for e in warnings)
    everything = list(
        client.list_entries(filter_=f'resource.labels.job_id="{job_id}"', order_by="timestamp desc")
    )
    assert [e.timestamp for e in everything] == sorted((e.timestamp for e in everything), reverse=True)
    # time ranges, at the entries' own (nanosecond) precision
    body = {
        "resourceNames": [f"projects/{PROJECT}"],
        "filter": f"resource.labels.job_id={job_id}",
        "pageSize": 1000,
    }
    ordered = _post(em, body)[1]["entries"]
    middle = len(ordered) // 2
    stamp = ordered[middle]["timestamp"]
    later = _post(em, {**body, "filter": f'{body["filter"]} AND timestamp>="{stamp}"'})[1]["entries"]
    assert later == ordered[middle:]
    earlier = _post(em, {**body, "filter": f'{body["filter"]} timestamp<"{stamp}"'})[1]["entries"]
    assert earlier == ordered[:middle]
    not_primary = list(
        client.list_entries(
            filter_=f'resource.labels.job_id="{job_id}" -resource.labels.task_name="workerpool0-0"'
        )
    )
    assert not_primary and all(e.resource.labels["task_name"] != "workerpool0-0" for e in not_primary)
    either = list(
        client.list_entries(
            filter_=f'resource.labels.job_id="{job_id}" '
            'AND (resource.labels.task_name="workerpool1-1" OR severity=ERROR)'
        )
    )
    assert {e.resource.labels["task_name"] for e in either} == {"workerpool1-0", "workerpool1-1"}
    assert not list(client.list_entries(filter_='resource.labels.job_id="1"'))


def test_lines_written_later_come_after_the_last_token(tmp_path: Path) -> None:
    code = (
        "import time, pathlib\nprint('first', flush=True)\n"
        "p = pathlib.Path('go')\n"
        "deadline = time.monotonic() + 20\n"
        "while not p.exists() and time.monotonic() < deadline: time.sleep(0.02)\n"
        "print('second', flush=True)\n"
    )
    with running_emulator(tmp_path) as em:
        client = grpc_client(em)
        job = client.create_custom_job(parent=PARENT, custom_job=_custom(container_job("live", code)))
        job_id = job.name.rsplit("/", 1)[-1]
        body = {"resourceNames": [f"projects/{PROJECT}"], "filter": f"resource.labels.job_id={job_id}"}
        deadline = time.monotonic() + 20
        first: list[dict[str, Any]] = []
        while not first and time.monotonic() < deadline:
            first = _post(em, body)[1].get("entries", [])
            time.sleep(0.05)
        assert [e["textPayload"] for e in first] == ["first"]
        (em.config.state_dir / "work" / job_id / "workerpool0-0" / "go").touch()
        wait_for_state(client, job.name, ENDED)
        watermark = first[-1]["timestamp"]
        status, page = _post(em, {**body, "filter": f'{body["filter"]} timestamp>"{watermark}"'})
        assert status == 200
        assert [e["textPayload"] for e in page["entries"]] == ["second"]


def test_tuning_trial_lines_carry_the_tuning_job_and_trial_id(tmp_path: Path) -> None:
    from google.cloud import aiplatform_v1

    with running_emulator(tmp_path) as em:
        client = grpc_client(em)
        body = tuning_job("tune", "print('trial says hi')", max_trials=2)
        job = client.create_hyperparameter_tuning_job(
            parent=PARENT,
            hyperparameter_tuning_job=aiplatform_v1.HyperparameterTuningJob.from_json(json.dumps(body)),
        )
        wait_for_state(client, job.name, ENDED)
        tuning_id = job.name.rsplit("/", 1)[-1]
        status, page = _post(
            em,
            {
                "resourceNames": [f"projects/{PROJECT}"],
                "filter": f'resource.labels.job_id="{tuning_id}" AND labels."ml.googleapis.com/trial_id"="2"',
            },
        )
    assert status == 200
    assert [e["textPayload"] for e in page["entries"]] == ["trial says hi"]
    assert page["entries"][0]["labels"] == {"ml.googleapis.com/trial_id": "2"}
    assert page["entries"][0]["resource"]["labels"]["task_name"] == "workerpool0-0"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"filter": "severity>=LOUD"}, "severity must be one of"),
        ({"filter": 'resource.labels.job_id=~"1.*"'}, "regular expressions"),
        ({"filter": "timestamp>=yesterday"}, "RFC 3339"),
        ({"filter": "(" * 200}, "nested parentheses"),
        ({"filter": "a" * 20_001}, "at most 20000 characters"),
        ({"filter": "foo.bar=1"}, "unsupported field"),
        ({"filter": 'resource.type="ml_job'}, "unterminated"),
        ({"pageSize": 5000}, "pageSize"),
        ({"pageToken": "not-a-token"}, "pageToken"),
        ({"orderBy": "severity"}, "orderBy"),
        ({"resourceNames": ["folders/1"]}, "resourceNames"),
        ({"resourceNames": []}, "resourceNames"),
        ({"pageSize": "many"}, "Invalid JSON payload"),
    ],
)
def test_bad_requests_are_400_naming_the_field(finished: Any, body: dict[str, Any], needle: str) -> None:
    em, _ = finished
    status, data = _post(em, {"resourceNames": [f"projects/{PROJECT}"], **body})
    assert status == 400, data
    assert data["error"]["status"] == "INVALID_ARGUMENT"
    assert needle in data["error"]["message"]


def test_grpc_bad_filter_is_invalid_argument(finished: Any) -> None:
    from google.api_core import exceptions

    em, _ = finished
    with pytest.raises(exceptions.InvalidArgument, match="severity must be one of"):
        list(
            _gapic(em).list_log_entries(
                request={"resource_names": [f"projects/{PROJECT}"], "filter": "severity=x"}
            )
        )


def test_a_token_from_another_filter_is_refused(finished: Any) -> None:
    em, job_id = finished
    base = {
        "resourceNames": [f"projects/{PROJECT}"],
        "filter": f"resource.labels.job_id={job_id}",
        "pageSize": 1,
    }
    token = _post(em, base)[1]["nextPageToken"]
    status, data = _post(em, {**base, "filter": "severity>=ERROR", "pageToken": token})
    assert status == 400
    assert "another filter" in data["error"]["message"]


def test_injected_resource_exhausted_reaches_the_client(tmp_path: Path) -> None:
    from google.api_core import exceptions

    with running_emulator(tmp_path) as em:
        em.config.faults.error_rate = {"ListLogEntries": 1.0}
        em.config.faults.error_codes = ["RESOURCE_EXHAUSTED"]
        with pytest.raises(exceptions.ResourceExhausted):
            _gapic(em).list_log_entries(request={"resource_names": [f"projects/{PROJECT}"]}, retry=None)
        assert em.logs.calls == 1


def test_a_line_read_later_sorts_after_every_line_read_before(tmp_path: Path) -> None:
    """Even when its file's modification time is older (a write racing the previous read)."""
    import os

    from vertex_emulator.logging_api import LogEntriesApi
    from vertex_emulator.store import JobStore

    store = JobStore(tmp_path / "jobs.sqlite3")
    try:
        job = store.insert("customJobs", PARENT, {"displayName": "race"})
        job_id = job["name"].rsplit("/", 1)[-1]
        logs = tmp_path / "logs" / job_id
        logs.mkdir(parents=True)
        (logs / "workerpool0-0.log").write_text("primary line\n")
        api = LogEntriesApi(store, tmp_path)
        first = api.list_entries([f"projects/{PROJECT}"])["entries"]
        late = logs / "workerpool1-0.log"
        late.write_text("worker line\n")
        old = time.time() - 60
        os.utime(late, (old, old))
        second = api.list_entries([f"projects/{PROJECT}"])["entries"]
    finally:
        store.close()
    assert [e["textPayload"] for e in first] == ["primary line"]
    assert [e["textPayload"] for e in second] == ["primary line", "worker line"]
    assert second[1]["timestamp"] > first[0]["timestamp"]
