"""A damaged state directory: the emulator starts, reports the damage, sets it aside and keeps every
good job (core/jobstore_repair.py, ``Runner.recover``, the List's own guard)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from vertex_emulator import testing
from vertex_emulator.core.jobstore import JobStore

PARENT = testing.PARENT


def seed(state: Path, count: int, state_name: str = "JOB_STATE_SUCCEEDED") -> list[str]:
    store = JobStore(state / "jobs.sqlite3")
    names = []
    for i in range(count):
        job = store.insert("customJobs", PARENT, testing.container_job(f"job-{i}", "pass"))

        def settle(j: dict[str, object]) -> None:
            j["state"] = state_name

        store.update(job["name"], settle)
        names.append(job["name"])
    store.close()
    return names


def set_body(state: Path, name: str, body: str) -> None:
    with sqlite3.connect(state / "jobs.sqlite3") as db:
        db.execute("UPDATE jobs SET body = ? WHERE name = ?", (body, name))


def test_rows_that_do_not_parse_are_quarantined_and_reported(tmp_path: Path) -> None:
    names = seed(tmp_path, 4)
    set_body(tmp_path, names[1], "{not json")
    set_body(tmp_path, names[2], json.dumps([1, 2]))
    store = JobStore(tmp_path / "jobs.sqlite3")
    try:
        kept = [job["name"] for job in store.list("customJobs", PARENT)]
        assert kept == [names[0], names[3]]
        assert len(store.damage) == 2 and names[1] in store.damage[0] and "not JSON" in store.damage[0]
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "jobs.sqlite3") as db:
        rows = db.execute("SELECT name, body FROM quarantined_jobs ORDER BY name").fetchall()
    assert sorted(rows) == sorted([(names[1], "{not json"), (names[2], "[1, 2]")])


def test_an_unreadable_database_is_moved_aside_and_the_emulator_starts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    seed(state, 30)
    db_path = state / "jobs.sqlite3"
    raw = db_path.read_bytes()
    db_path.write_bytes(raw[:100] + b"\x00garbage" * 64 + raw[612:])  # a damaged header page
    with testing.running_emulator(tmp_path, state_dir=state) as em:
        assert em.store.damage and "could not be read" in em.store.damage[0], em.store.damage
        assert list((state / "quarantine").iterdir())
        client = testing.grpc_client(em)
        assert list(client.list_custom_jobs(parent=PARENT)) is not None


def test_a_truncated_database_keeps_what_can_be_read(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    seed(state, 50)
    db_path = state / "jobs.sqlite3"
    raw = db_path.read_bytes()
    db_path.write_bytes(raw[: len(raw) // 2])
    with testing.running_emulator(tmp_path, state_dir=state) as em:
        assert em.store.damage, "a truncated database must be reported"
        names = [job.name for job in testing.grpc_client(em).list_custom_jobs(parent=PARENT)]
        assert len(names) == len(em.store.list("customJobs", PARENT))


def test_a_damaged_running_job_does_not_stop_startup(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    names = seed(state, 3, "JOB_STATE_RUNNING")
    bad = json.loads(
        sqlite3.connect(state / "jobs.sqlite3")
        .execute("SELECT body FROM jobs WHERE name = ?", (names[1],))
        .fetchone()[0]
    )
    bad["jobSpec"] = "not an object"  # valid JSON, wrong shape: recovery cannot read it
    set_body(state, names[1], json.dumps(bad))
    set_body(state, names[2], "")
    with testing.running_emulator(tmp_path, state_dir=state) as em:
        kept = {job["name"]: job["state"] for job in em.store.list("customJobs", PARENT)}
        assert list(kept) == [names[0]] and kept[names[0]] != "JOB_STATE_RUNNING", kept
        assert any(names[1] in line for line in em.store.damage), em.store.damage
        assert any(names[2] in line for line in em.store.damage), em.store.damage


def test_a_damaged_finished_job_does_not_fail_list_for_its_parent(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    names = seed(state, 3)
    with sqlite3.connect(state / "jobs.sqlite3") as db:
        body = json.loads(db.execute("SELECT body FROM jobs WHERE name = ?", (names[1],)).fetchone()[0])
    body["jobSpec"] = {"workerPoolSpecs": "not a list"}
    set_body(state, names[1], json.dumps(body))
    with testing.running_emulator(tmp_path, state_dir=state) as em:
        listed = [job.name for job in testing.grpc_client(em).list_custom_jobs(parent=PARENT)]
        assert sorted(listed) == sorted([names[0], names[2]])
        assert any(names[1] in line for line in em.store.damage), em.store.damage
