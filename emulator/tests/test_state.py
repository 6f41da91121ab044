"""The emulator's state kept and given back (``/emulator/state``, app/state.py): a snapshot of jobs, logs,
objects and settings, changed, restored and compared through the stock clients (the JobService over
gRPC and REST, google-cloud-logging, google-cloud-storage); a reset to empty; running jobs stopped with
no process left; bad input refused with the field and the rule."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from logging_support import custom, job_filter, logging_client, text_of
from polling import poll_until

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, wait_for_state

ENDED = ["JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"]


def admin(
    em: Emulator, method: str, path: str, body: dict[str, Any] | None = None, **headers: str
) -> tuple[int, dict[str, Any]]:
    """An admin call over the REST port: (HTTP status, JSON answer)."""
    data = None if body is None else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **headers} if body is not None else dict(headers)
    request = urllib.request.Request(em.rest_endpoint + path, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


@pytest.fixture
def storage_client(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The stock google-cloud-storage client on the emulator's Cloud Storage, as a replica builds it."""
    from google.cloud import storage

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", str(emulator.config.storage_endpoint))
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    client = storage.Client()
    yield client
    client.close()


def _jobs(client: Any) -> list[tuple[str, str, str, str]]:
    return sorted(
        (job.name, job.display_name, job.state.name, job.create_time.isoformat())
        for job in client.list_custom_jobs(parent=PARENT)
    )


def _lines(em: Emulator, name: str) -> list[str]:
    job_id = name.rsplit("/", 1)[-1]
    primary = job_filter(job_id, 'resource.labels.task_name="workerpool0-0"')
    return [text_of(entry) for entry in logging_client(em, grpc=False).list_entries(filter_=primary)]


def _run(client: Any, display_name: str, code: str) -> str:
    job = client.create_custom_job(parent=PARENT, custom_job=custom(container_job(display_name, code)))
    wait_for_state(client, job.name, ENDED, timeout=120)
    return str(job.name)


def test_a_snapshot_changed_then_restored_is_the_same_state(
    emulator: Emulator, grpc_client: Any, storage_client: Any
) -> None:
    first = _run(grpc_client, "night-one", "print('trained epoch 1')")
    bucket = storage_client.create_bucket("models")
    bucket.blob("run/model.txt").upload_from_string("weights-1")
    a100s = {"us-central1": {"NVIDIA_TESLA_A100": 8}}
    assert admin(emulator, "PUT", "/emulator/capacity", {"quota": a100s})[0] == 200
    before_jobs, before_lines = _jobs(grpc_client), _lines(emulator, first)
    before_blob = bucket.get_blob("run/model.txt")
    assert before_lines == ["trained epoch 1"]

    status, summary = admin(emulator, "POST", "/emulator/state:snapshot", {"name": "night-1"})
    assert status == 200, summary
    assert (summary["name"], summary["jobs"], summary["objects"]) == ("night-1", 1, 1)
    assert summary["logFiles"] >= 1 and 0 < summary["bytes"] < 1024**2

    rest = testing.rest_client(emulator)  # the change, over REST this time
    second = rest.create_custom_job(parent=PARENT, custom_job=custom(container_job("night-two", "print(2)")))
    wait_for_state(rest, second.name, ENDED, timeout=120)
    grpc_client.delete_custom_job(name=first).result(timeout=60)
    bucket.blob("run/model.txt").upload_from_string("weights-2")
    bucket.blob("run/extra.txt").upload_from_string("extra")
    admin(emulator, "PUT", "/emulator/capacity", {"quota": {}})
    assert _jobs(rest) != before_jobs

    status, restored = admin(emulator, "POST", "/emulator/state:restore", {"name": "night-1"})
    assert status == 200, restored
    assert (restored["restored"], restored["jobs"], restored["stoppedJobs"]) == ("night-1", 1, [])
    assert _jobs(grpc_client) == _jobs(rest) == before_jobs
    assert _lines(emulator, first) == before_lines
    assert [blob.name for blob in storage_client.list_blobs("models")] == ["run/model.txt"]
    after_blob = bucket.get_blob("run/model.txt")
    assert after_blob.download_as_text() == "weights-1"
    assert after_blob.generation == before_blob.generation
    capacity = admin(emulator, "GET", "/emulator/capacity")[1]
    assert capacity["quota"] == a100s
    # the restored emulator runs jobs as before
    assert _run(grpc_client, "after", "print(3)") not in {row[0] for row in before_jobs}


def test_reset_leaves_no_job_log_or_object_and_the_start_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.cloud import storage

    from vertex_emulator.core.config import Capacity, Faults

    start = Capacity(stockout_after_s=5.0)
    with testing.running_emulator(tmp_path, capacity=start, faults=Faults(latency_s=0.0)) as em:
        client = testing.grpc_client(em)
        name = _run(client, "before-reset", "print('line')")
        assert _lines(em, name) == ["line"]
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", str(em.config.storage_endpoint))
        objects = storage.Client()
        objects.create_bucket("kept").blob("a.txt").upload_from_string("a")
        no_l4 = {"us-central1": {"NVIDIA_L4": 0}}
        admin(em, "PUT", "/emulator/capacity", {"stockout_after_s": 1, "stock": no_l4})
        admin(em, "PUT", "/emulator/faults", {"queued_s": 2})

        status, summary = admin(em, "POST", "/emulator/state:reset", {"keep_objects": True})
        assert status == 200, summary
        assert (summary["reset"], summary["keptObjects"], summary["jobs"]) == (True, True, 0)
        assert list(client.list_custom_jobs(parent=PARENT)) == []
        assert _lines(em, name) == []
        assert [b.name for b in objects.list_blobs("kept")] == ["a.txt"]
        capacity = admin(em, "GET", "/emulator/capacity")[1]
        assert (capacity["stockout_after_s"], capacity["stock"]) == (5.0, {})
        assert admin(em, "GET", "/emulator/faults")[1]["queued_s"] == 0

        assert admin(em, "POST", "/emulator/state:reset", {})[0] == 200
        assert [b.name for b in objects.list_buckets()] == []
        assert not any((em.config.state_dir / "logs").iterdir())
        objects.close()


def test_a_restore_stops_running_jobs_and_settles_the_snapshot_s(
    emulator: Emulator, grpc_client: Any
) -> None:
    sleeper = container_job("sleeper", "import time; print('up', flush=True); time.sleep(600)")
    job = grpc_client.create_custom_job(parent=PARENT, custom_job=custom(sleeper))
    wait_for_state(grpc_client, job.name, ["JOB_STATE_RUNNING"], timeout=120)
    view = poll_until(
        lambda: (v := emulator.runner.replica_view(job.name, "workerpool0-0")) and v.get("pid") and v,
        timeout=60,
        interval=0.05,
        what="the replica's pid",
    )
    pid = int(view["pid"])
    assert admin(emulator, "POST", "/emulator/state:snapshot", {"name": "while-running"})[0] == 200

    status, restored = admin(emulator, "POST", "/emulator/state:restore", {"name": "while-running"})
    assert status == 200, restored
    assert restored["stoppedJobs"] == [job.name] and restored["notStopped"] == []
    poll_until(lambda: _gone(pid), timeout=30, interval=0.05, what=f"replica process {pid} gone")
    settled = grpc_client.get_custom_job(name=job.name)  # held RUNNING by the snapshot: settled as a restart
    assert settled.state.name == "JOB_STATE_FAILED"
    assert settled.error.code == 13
    assert "restored from snapshot 'while-running' while the job was RUNNING" in settled.error.message

    job = grpc_client.create_custom_job(parent=PARENT, custom_job=custom(sleeper))
    wait_for_state(grpc_client, job.name, ["JOB_STATE_RUNNING"], timeout=120)
    status, summary = admin(emulator, "POST", "/emulator/state:reset", {})
    assert status == 200 and summary["stoppedJobs"] == [job.name], summary
    assert list(grpc_client.list_custom_jobs(parent=PARENT)) == []


def _names(em: Emulator) -> list[str]:
    return [s["name"] for s in admin(em, "GET", "/emulator/state/snapshots")[1]["snapshots"]]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        (
            "POST",
            "/emulator/state:restore",
            {"name": "nope"},
            404,
            "no snapshot named 'nope' (snapshots: kept)",
        ),
        ("POST", "/emulator/state:snapshot", {"name": "../up"}, 400, "name: must be 1 to 63 letters"),
        ("POST", "/emulator/state:snapshot", {"name": "a/b"}, 400, "(no path separator) (got 'a/b')"),
        ("POST", "/emulator/state:restore", {"name": "/etc"}, 400, "name: must be 1 to 63"),
        ("POST", "/emulator/state:snapshot", {"name": "x" * 64}, 400, "name: must be 1 to 63"),
        ("POST", "/emulator/state:snapshot", {}, 400, "name: required"),
        ("POST", "/emulator/state:snapshot", {"name": "kept"}, 409, "a snapshot named 'kept' exists"),
        ("POST", "/emulator/state:snapshot", {"name": "n", "path": "/tmp"}, 400, "path: unknown field"),
        ("POST", "/emulator/state:reset", {"keep_objects": "yes"}, 400, "keep_objects: must be a bool"),
        ("GET", "/emulator/state/snapshots/a%2Fb", None, 400, "name: must be 1 to 63"),
        ("DELETE", "/emulator/state/snapshots/nope", None, 404, "no snapshot named 'nope'"),
        ("GET", "/emulator/state:reset", None, 404, "no such resource"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    emulator: Emulator, method: str, path: str, body: dict[str, Any] | None, status: int, message: str
) -> None:
    assert admin(emulator, "POST", "/emulator/state:snapshot", {"name": "kept"})[0] == 200
    got, answer = admin(emulator, method, path, body)
    assert got == status, answer
    assert message in answer["error"]["message"], answer
    assert _names(emulator) == ["kept"]
    assert not (emulator.config.state_dir.parent / "up").exists()


def test_an_oversize_state_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    with testing.running_emulator(tmp_path, snapshot_max_bytes=4096) as em:
        (em.config.gcs_root / "big").mkdir()
        (em.config.gcs_root / "big" / "blob.bin").write_bytes(b"0" * 8192)
        status, answer = admin(em, "POST", "/emulator/state:snapshot", {"name": "too-big"})
        assert status == 400, answer
        assert answer["error"]["status"] == "FAILED_PRECONDITION"
        assert "more than 4096 bytes" in answer["error"]["message"]
        assert "nothing was written" in answer["error"]["message"]
        assert admin(em, "GET", "/emulator/state/snapshots")[1] == {"snapshots": []}
        assert [p.name for p in (em.config.state_dir / "snapshots").iterdir()] == []


def test_a_damaged_snapshot_changes_nothing(emulator: Emulator, grpc_client: Any) -> None:
    name = _run(grpc_client, "kept", "print(1)")
    assert admin(emulator, "POST", "/emulator/state:snapshot", {"name": "broken"})[0] == 200
    jobs = emulator.config.state_dir / "snapshots" / "broken" / "jobs.json"
    rows = json.loads(jobs.read_text())
    rows[0]["body"] = "{not json"
    jobs.write_text(json.dumps(rows))
    assert admin(emulator, "POST", "/emulator/state:reset", {})[0] == 200
    _run(grpc_client, "after-reset", "print(2)")
    before = _jobs(grpc_client)
    status, answer = admin(emulator, "POST", "/emulator/state:restore", {"name": "broken"})
    assert status == 400 and answer["error"]["status"] == "FAILED_PRECONDITION", answer
    assert "snapshot 'broken' is damaged: jobs.json[0]: the body is not JSON" in answer["error"]["message"]
    assert _jobs(grpc_client) == before and name not in {row[0] for row in before}


def test_list_replace_and_delete(emulator: Emulator, grpc_client: Any) -> None:
    assert admin(emulator, "POST", "/emulator/state:snapshot", {"name": "a"})[1]["jobs"] == 0
    _run(grpc_client, "one", "pass")
    status, replaced = admin(emulator, "POST", "/emulator/state:snapshot", {"name": "a", "replace": True})
    assert status == 200 and replaced["jobs"] == 1
    assert admin(emulator, "POST", "/emulator/state:snapshot", {"name": "b.2"})[0] == 200
    listed = admin(emulator, "GET", "/emulator/state/snapshots")[1]["snapshots"]
    assert [(s["name"], s["jobs"]) for s in listed] == [("a", 1), ("b.2", 1)]
    assert admin(emulator, "GET", "/emulator/state/snapshots/a")[1] == listed[0]
    assert admin(emulator, "DELETE", "/emulator/state/snapshots/a") == (200, {})
    assert _names(emulator) == ["b.2"]
    assert emulator.state.list() == admin(emulator, "GET", "/emulator/state/snapshots")[1]["snapshots"]


def test_admin_state_calls_are_checked_like_every_call(tmp_path: Path) -> None:
    token = "a-token-of-at-least-16-characters"
    with testing.running_emulator(tmp_path, auth_token=token) as em:
        status, answer = admin(em, "POST", "/emulator/state:reset", {})
        assert (status, answer["error"]["status"]) == (401, "UNAUTHENTICATED")
        status, answer = admin(em, "POST", "/emulator/state:reset", {}, Origin="http://evil.example")
        assert status == 403
        assert admin(em, "POST", "/emulator/state:reset", {}, Authorization=f"Bearer {token}")[0] == 200


def test_the_state_command_and_restore_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess

    from vertex_emulator.cli import main

    with testing.running_emulator(tmp_path) as em:
        client = testing.grpc_client(em)
        name = _run(client, "for-the-cli", "print(1)")
        port = em.rest_endpoint.rsplit(":", 1)[1]

        def state(*args: str) -> subprocess.CompletedProcess[str]:
            argv = [sys.executable, "-m", "vertex_emulator", "state", "--rest-port", port, *args]
            return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)

        done = state("snapshot", "cli-night")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["jobs"] == 1
        assert [s["name"] for s in json.loads(state("list").stdout)["snapshots"]] == ["cli-night"]
        missing = state("restore", "nope")
        assert missing.returncode == 1
        assert missing.stderr.strip() == (
            "vertex-emulator state: NOT_FOUND: name: no snapshot named 'nope' (snapshots: cli-night)"
        )
        assert json.loads(state("reset").stdout)["reset"] is True
        assert list(client.list_custom_jobs(parent=PARENT)) == []
        assert json.loads(state("restore", "cli-night").stdout)["restored"] == "cli-night"
        assert [job.name for job in client.list_custom_jobs(parent=PARENT)] == [name]
        state_dir = em.config.state_dir
    free_ports = ["--grpc-port", "0", "--rest-port", "0"]
    assert main(["--state-dir", str(state_dir), "--restore", "nope", *free_ports]) == 1
    assert capsys.readouterr().err.strip() == (
        "cannot start the emulator: --restore: name: no snapshot named 'nope' (snapshots: cli-night)"
    )
    with pytest.raises(SystemExit):
        from vertex_emulator.cli import parse_config

        parse_config(["--restore", "../x"])
    config = testing.make_config(tmp_path, restore="cli-night")
    config.state_dir = state_dir
    with Emulator(config) as em:  # --restore: its jobs from the first call on
        assert [job.name for job in testing.grpc_client(em).list_custom_jobs(parent=PARENT)] == [name]
