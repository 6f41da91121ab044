"""The emulator's Cloud Logging read API, through the stock google-cloud-logging clients: the entry
shape, pages, order, tokens, errors, faults, tuning trials and plain logs of an older emulator.
Streams, timestamps, service lines and filters: test_logging_streams.py and test_logging_filters.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from logging_support import PROJECT, custom, gapic, logging_client, post, text_of
from polling import poll_until

from vertex_emulator.testing import (
    PARENT,
    container_job,
    grpc_client,
    running_emulator,
    tuning_job,
    wait_for_state,
)

ENDED = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}

# Every replica prints, then leaves a mark; the primary ends the job (exit 0) once all three have
# marked, the workers wait to be stopped.
TRAINER = """
import json, os, pathlib, time
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
me = f"{task['type']}-{task['index']}"
for step in range(5):
    print(f"{task['type']} step {step}")
if task["type"] == "workerpool1":
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


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One finished CustomJob (primary + 2 workers) on a running emulator."""
    with running_emulator(tmp_path_factory.mktemp("logging")) as em:
        client = grpc_client(em)
        code = f"SHARED = {str(tmp_path_factory.mktemp('marks'))!r}" + TRAINER
        job = client.create_custom_job(
            parent=PARENT, custom_job=custom(container_job("logs", code, workers=2))
        )
        wait_for_state(client, job.name, ENDED)
        yield em, job.name.rsplit("/", 1)[-1]


def test_grpc_pages_return_every_line_once_in_order_per_replica(finished: Any) -> None:
    em, job_id = finished
    pager = gapic(em).list_log_entries(
        request={
            "resource_names": [f"projects/{PROJECT}"],
            "filter": f'resource.type="ml_job" AND resource.labels.job_id="{job_id}"',
            "page_size": 3,
        }
    )
    entries = list(pager)
    by_task: dict[str, list[str]] = {}
    for entry in entries:
        task = entry.resource.labels["task_name"]
        assert entry.resource.type == "ml_job"
        assert entry.resource.labels["project_id"] == PROJECT
        assert entry.resource.labels["job_id"] == job_id
        if task == "service":
            assert entry.log_name == f"projects/{PROJECT}/logs/ml.googleapis.com%2F{job_id}"
        else:
            assert entry.log_name == f"projects/{PROJECT}/logs/{task}"
            assert dict(entry.json_payload)["attrs"] == {"tag": task}
        by_task.setdefault(task, []).append(text_of(entry))
    assert sorted(by_task) == ["service", "workerpool0-0", "workerpool1-0", "workerpool1-1"]
    for key, lines in by_task.items():
        steps = [line for line in lines if " step " in line]
        assert [line.rsplit(" ", 1)[-1] for line in steps] == ([] if key == "service" else list("01234")), key
    assert by_task["service"][0] == "Waiting for job to be provisioned."
    assert by_task["service"][-1] == "Job completed successfully."
    ids = [entry.insert_id for entry in entries]
    assert len(ids) == len(set(ids))
    stamps = [entry.timestamp for entry in entries]
    assert stamps == sorted(stamps)


def test_a_replica_line_is_json_payload_with_message_levelname_and_tag(finished: Any) -> None:
    em, job_id = finished
    status, page = post(
        em,
        {
            "resourceNames": [f"projects/{PROJECT}"],
            "filter": f'resource.labels.job_id="{job_id}" resource.labels.task_name="workerpool1-0"',
            "pageSize": 1000,
        },
    )
    assert status == 200
    first = page["entries"][0]
    assert first["jsonPayload"] == {
        "message": "workerpool1 step 0",
        "levelname": "INFO",
        "attrs": {"tag": "workerpool1-0"},
    }
    assert "textPayload" not in first and "labels" not in first
    boom = next(e for e in page["entries"] if e["jsonPayload"]["message"] == "ValueError: boom")
    assert (boom["severity"], boom["jsonPayload"]["levelname"]) == ("ERROR", "ERROR")


def test_rest_client_filters_severity_time_and_not(finished: Any) -> None:
    em, job_id = finished
    client = logging_client(em, grpc=False)
    warnings = list(client.list_entries(filter_=f'resource.labels.job_id="{job_id}" severity>=WARNING'))
    assert warnings and all(e.severity == "ERROR" for e in warnings)
    assert any(text_of(e) == "ValueError: boom" for e in warnings)
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
    ordered = post(em, body)[1]["entries"]
    middle = len(ordered) // 2
    stamp = ordered[middle]["timestamp"]
    later = post(em, {**body, "filter": f'{body["filter"]} AND timestamp>="{stamp}"'})[1]["entries"]
    assert later == ordered[middle:]
    earlier = post(em, {**body, "filter": f'{body["filter"]} timestamp<"{stamp}"'})[1]["entries"]
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
        job = client.create_custom_job(parent=PARENT, custom_job=custom(container_job("live", code)))
        job_id = job.name.rsplit("/", 1)[-1]
        body = {
            "resourceNames": [f"projects/{PROJECT}"],
            "filter": f"resource.labels.job_id={job_id} resource.labels.task_name=workerpool0-0",
        }
        first = poll_until(lambda: post(em, body)[1].get("entries", []), timeout=20, interval=0.05)
        assert [text_of(e) for e in first] == ["first"]
        (em.config.state_dir / "work" / job_id / "workerpool0-0" / "go").touch()
        wait_for_state(client, job.name, ENDED)
        watermark = first[-1]["timestamp"]
        status, page = post(em, {**body, "filter": f'{body["filter"]} timestamp>"{watermark}"'})
        assert status == 200
        assert [text_of(e) for e in page["entries"]] == ["second"]


def test_tuning_trial_lines_carry_the_tuning_job_and_trial_id(tmp_path: Path) -> None:
    from google.cloud import aiplatform_v1

    with running_emulator(tmp_path) as em:
        client = grpc_client(em)
        body = tuning_job("tune", "print('trial says hi')", max_trials=2)
        # the trials report no metric (INFEASIBLE): allow two failed trials, or the first one's failure
        # would end the job before trial 2 runs (maxFailedTrialCount unset or 0)
        body["maxFailedTrialCount"] = 2
        job = client.create_hyperparameter_tuning_job(
            parent=PARENT,
            hyperparameter_tuning_job=aiplatform_v1.HyperparameterTuningJob.from_json(json.dumps(body)),
        )
        wait_for_state(client, job.name, ENDED)
        tuning_id = job.name.rsplit("/", 1)[-1]
        status, page = post(
            em,
            {
                "resourceNames": [f"projects/{PROJECT}"],
                "filter": f'resource.labels.job_id="{tuning_id}" AND labels."ml.googleapis.com/trial_id"="2"',
            },
        )
    assert status == 200
    replica = [e for e in page["entries"] if e["resource"]["labels"]["task_name"] == "workerpool0-0"]
    assert [text_of(e) for e in replica] == ["trial says hi"]
    assert replica[0]["labels"] == {"ml.googleapis.com/trial_id": "2"}
    # the trial's service lines are the tuning job's too, with the trial's label
    service = [e for e in page["entries"] if e["resource"]["labels"]["task_name"] == "service"]
    assert service and service[-1]["textPayload"] == "Job completed successfully."
    assert service[-1]["labels"]["ml.googleapis.com/trial_id"] == "2"
    assert service[-1]["logName"] == f"projects/{PROJECT}/logs/ml.googleapis.com%2F{tuning_id}"


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
    status, data = post(em, {"resourceNames": [f"projects/{PROJECT}"], **body})
    assert status == 400, data
    assert data["error"]["status"] == "INVALID_ARGUMENT"
    assert needle in data["error"]["message"]


def test_grpc_bad_filter_is_invalid_argument(finished: Any) -> None:
    from google.api_core import exceptions

    em, _ = finished
    with pytest.raises(exceptions.InvalidArgument, match="severity must be one of"):
        list(
            gapic(em).list_log_entries(
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
    token = post(em, base)[1]["nextPageToken"]
    status, data = post(em, {**base, "filter": "severity>=ERROR", "pageToken": token})
    assert status == 400
    assert "another filter" in data["error"]["message"]


def test_injected_resource_exhausted_reaches_the_client(tmp_path: Path) -> None:
    from google.api_core import exceptions

    with running_emulator(tmp_path) as em:
        em.config.faults.error_rate = {"ListLogEntries": 1.0}
        em.config.faults.error_codes = ["RESOURCE_EXHAUSTED"]
        with pytest.raises(exceptions.ResourceExhausted):
            gapic(em).list_log_entries(request={"resource_names": [f"projects/{PROJECT}"]}, retry=None)
        assert em.logs.calls == 1


def test_a_plain_log_line_read_later_sorts_after_every_line_read_before(tmp_path: Path) -> None:
    """A ``<key>.log`` with no ``.jsonl`` (an older emulator's state directory) is read as stdout
    lines; a line read later sorts later even when its file's modification time is older."""
    import os

    from vertex_emulator.cloud_logging.api import LogEntriesApi
    from vertex_emulator.core.jobstore import JobStore

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
    assert [text_of(e) for e in first] == ["primary line"]
    assert [text_of(e) for e in second] == ["primary line", "worker line"]
    assert second[1]["timestamp"] > first[0]["timestamp"]
