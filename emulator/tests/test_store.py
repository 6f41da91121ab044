"""JobStore: ids, names, timestamps, atomic updates, ordering, persistence, thread safety."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from vertex_emulator.core.jobstore import JobStore, _after
from vertex_emulator.core.timefmt import parse_rfc3339

PARENT = "projects/p/locations/us-central1"


def test_insert_assigns_identity_and_round_trips_through_the_v1_proto(tmp_path: Path) -> None:
    from google.cloud.aiplatform_v1 import CustomJob

    store = JobStore(tmp_path / "jobs.sqlite3")
    job = store.insert("customJobs", PARENT, {"displayName": "a", "labels": {"k": "v"}})
    prefix = f"{PARENT}/customJobs/"
    assert job["name"].startswith(prefix)
    job_id = job["name"][len(prefix) :]
    assert job_id.isdigit() and len(job_id) == 19
    assert job["state"] == "JOB_STATE_QUEUED"
    assert job["createTime"] == job["updateTime"]
    assert job["createTime"].endswith("Z")
    parse_rfc3339(job["createTime"])
    proto = CustomJob.from_json(__import__("json").dumps(job))
    assert proto.state == 1
    assert proto.display_name == "a"
    assert store.get(job["name"]) == job


def test_get_and_delete_missing_raise_key_error(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    with pytest.raises(KeyError):
        store.get(f"{PARENT}/customJobs/1")
    with pytest.raises(KeyError):
        store.delete(f"{PARENT}/customJobs/1")
    with pytest.raises(KeyError):
        store.update(f"{PARENT}/customJobs/1", lambda b: None)
    with pytest.raises(ValueError, match="kind must be one of"):
        store.insert("trainingPipelines", PARENT, {})  # type: ignore[arg-type]


def test_update_is_atomic_bumps_update_time_and_rolls_back_on_error(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    job = store.insert("customJobs", PARENT, {"displayName": "a"})

    def set_running(body: dict[str, object]) -> None:
        body["state"] = "JOB_STATE_RUNNING"
        body["name"] = "ignored"

    updated = store.update(job["name"], set_running)
    assert updated["state"] == "JOB_STATE_RUNNING"
    assert updated["name"] == job["name"]
    assert parse_rfc3339(updated["updateTime"]) >= parse_rfc3339(job["updateTime"])

    def boom(body: dict[str, object]) -> None:
        body["state"] = "JOB_STATE_FAILED"
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        store.update(job["name"], boom)
    assert store.get(job["name"])["state"] == "JOB_STATE_RUNNING"


def test_concurrent_updates_lose_nothing(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    name = store.insert("customJobs", PARENT, {"labels": {}})["name"]

    def bump(body: dict[str, object]) -> None:
        labels = body["labels"]
        assert isinstance(labels, dict)
        labels["n"] = str(int(labels.get("n", "0")) + 1)

    def worker() -> None:
        for _ in range(50):
            store.update(name, bump)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get(name)["labels"]["n"] == "200"


def test_list_is_per_kind_and_parent_in_creation_order_and_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "state" / "jobs.sqlite3"
    store = JobStore(path)
    names = [store.insert("customJobs", PARENT, {"displayName": str(i)})["name"] for i in range(5)]
    store.insert("hyperparameterTuningJobs", PARENT, {"displayName": "h"})
    store.insert("customJobs", "projects/p/locations/europe-west4", {"displayName": "other"})
    store.update(names[1], lambda b: b.update(state="JOB_STATE_SUCCEEDED"))
    store.delete(names[2])
    store.close()

    reopened = JobStore(path)
    listed = [j["name"] for j in reopened.list("customJobs", PARENT)]
    assert listed == [names[0], names[1], names[3], names[4]]
    assert [j["displayName"] for j in reopened.list("hyperparameterTuningJobs", PARENT)] == ["h"]
    pending = {j["displayName"] for j in reopened.non_terminal()}
    assert pending == {"0", "3", "4", "h", "other"}


def test_parse_rfc3339_accepts_nanos_and_offsets_and_rejects_naive() -> None:
    a = parse_rfc3339("2026-01-02T03:04:05.123456789Z")
    b = parse_rfc3339("2026-01-02T05:04:05.123456+02:00")
    assert a == b
    with pytest.raises(ValueError, match="no time zone"):
        parse_rfc3339("2026-01-02T03:04:05")


def test_update_time_strictly_increases_per_job(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    name = store.insert("customJobs", PARENT, {})["name"]
    # Many updates within the clock's resolution still give distinct, increasing revisions.
    stamps = [store.update(name, lambda b: None)["updateTime"] for _ in range(200)]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    store.update(name, lambda b: b.update(updateTime="2999-01-01T00:00:00.000000Z"))  # fn cannot set it
    assert store.get(name)["updateTime"] < "2999"
    # A clock that has not moved past the previous revision (or went back) still moves forward.
    assert _after("2999-01-01T00:00:00.999999Z") == "2999-01-01T00:00:01.000000Z"
    assert _after("2000-01-01T00:00:00.000000Z") > "2020"


def test_list_shared_follows_every_write_and_a_reopen(tmp_path: Path) -> None:
    """The List path's parsed jobs are the stored ones after inserts, updates (a failed one too) and
    deletes, and after the store is opened again on the same file."""
    store = JobStore(tmp_path / "jobs.sqlite3")
    a = store.insert("customJobs", PARENT, {"displayName": "a"})
    b = store.insert("customJobs", PARENT, {"displayName": "b"})
    assert store.list_shared("customJobs", PARENT) == store.list("customJobs", PARENT)
    store.update(a["name"], lambda job: job.update(state="JOB_STATE_RUNNING"))

    def broken(job: dict[str, object]) -> None:
        job["state"] = "JOB_STATE_FAILED"
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        store.update(b["name"], broken)
    shared = store.list_shared("customJobs", PARENT)
    assert shared == store.list("customJobs", PARENT)
    assert [job["state"] for job in shared] == ["JOB_STATE_RUNNING", "JOB_STATE_QUEUED"]
    store.delete(a["name"])
    assert [job["name"] for job in store.list_shared("customJobs", PARENT)] == [b["name"]]
    again = JobStore(tmp_path / "jobs.sqlite3")
    assert again.list_shared("customJobs", PARENT) == store.list("customJobs", PARENT)
