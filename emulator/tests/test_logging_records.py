"""The structured replica logs under the Logging API: the writer's lock and clock, the reader's index
(bounded memory, nothing read twice), torn records, and which files a request reads."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from logging_support import PROJECT, text_of
from polling import poll_until

from vertex_emulator.cloud_logging.api import LogEntriesApi
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.runtime.log_records import RecordIndex, records_path
from vertex_emulator.runtime.replica_output import RecordLog
from vertex_emulator.testing import PARENT


def test_records_round_trip_in_both_orders(tmp_path: Path) -> None:
    path = tmp_path / "workerpool0-0.jsonl"
    log = RecordLog(str(path))
    log.append("stdout", ["one", "two"])
    log.append("stderr", ["three ü"])
    log.close()
    index = RecordIndex(path)
    index.refresh()
    records = list(index.read(0, len(index)))
    assert [(r.index, r.stream, r.text) for r in records] == [
        (0, "stdout", "one"),
        (1, "stdout", "two"),
        (2, "stderr", "three ü"),
    ]
    assert [r.t for r in records] == sorted({r.t for r in records})  # strictly increasing
    assert [r.text for r in index.read(1, 3, reverse=True)] == ["three ü", "two"]
    first, _, third = records
    assert index.span(first.t + 1, third.t) == (1, 3)
    assert index.span(third.t + 1, None) == (3, 3)


def test_the_index_holds_16_bytes_a_line_and_reads_each_byte_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "workerpool0-0.jsonl"
    log = RecordLog(str(path))
    for _ in range(10):
        log.append("stdout", ["x" * 1000] * 500)
    index = RecordIndex(path)
    reads: list[tuple[int, int]] = []
    real_pread = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        reads.append((offset, n))
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", pread)
    index.refresh()
    assert len(index) == 5000
    held = index.times.itemsize * len(index.times) + index.offsets.itemsize * len(index.offsets)
    assert held == 16 * 5000  # no text is kept: about 1 KiB a line stays on disk
    size = path.stat().st_size
    assert index.size == size and sum(n for _, n in reads) == size
    reads.clear()
    index.refresh()
    assert reads == []  # nothing new, nothing read
    log.append("stdout", ["later"])
    index.refresh()
    assert [offset for offset, _ in reads] == [size]  # only what was appended
    assert [r.text for r in index.read(5000, 5001)] == ["later"]


def test_a_torn_record_is_skipped_and_the_next_writer_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "workerpool0-0.jsonl"
    log = RecordLog(str(path))
    log.append("stdout", ["whole"])
    log.close()
    with open(path, "ab") as fh:
        fh.write(b'{"t":1,"s":"std')  # a writer killed mid-record
    index = RecordIndex(path)
    index.refresh()
    assert len(index) == 1 and index.size < path.stat().st_size  # the torn tail waits
    again = RecordLog(str(path))  # a restarted replica's supervisor
    again.append("stdout", ["after the restart"])
    index.refresh()
    assert [r.text for r in index.read(0, len(index))] == ["whole", "after the restart"]
    assert index.skipped == 1


def _blocked_on(path: Path) -> bool:
    """True when /proc/locks shows a process or thread waiting for a lock on ``path``."""
    inode = f":{path.stat().st_ino} "
    with open("/proc/locks") as fh:
        return any("->" in line and inode in line for line in fh)


def test_a_reader_waits_for_a_writer_that_has_taken_its_time(tmp_path: Path) -> None:
    """The rule that keeps a line from arriving after a newer one: a writer takes its time under the
    lock, so a reader that starts later sees the line, however long the writer takes to write it."""
    import fcntl

    path = tmp_path / "workerpool0-0.jsonl"
    log = RecordLog(str(path))
    index = RecordIndex(path)
    fcntl.flock(log.fd, fcntl.LOCK_EX)  # a writer inside append(), between its clock and its write
    stamp = time.time_ns()
    reader = threading.Thread(target=index.refresh)
    reader.start()
    try:
        poll_until(lambda: _blocked_on(path), timeout=10, interval=0.01, what="the reader waiting")
        os.write(log.fd, (json.dumps({"t": stamp, "s": "stdout", "m": "slow"}) + "\n").encode())
    finally:
        fcntl.flock(log.fd, fcntl.LOCK_UN)
        reader.join(timeout=10)
    assert [r.text for r in index.read(0, len(index))] == ["slow"]


@pytest.fixture
def store(tmp_path: Path) -> Any:
    store = JobStore(tmp_path / "jobs.sqlite3")
    yield store
    store.close()


def _job(store: JobStore, tmp_path: Path) -> tuple[str, Path]:
    job = store.insert("customJobs", PARENT, {"displayName": "files"})
    job_id = str(job["name"]).rsplit("/", 1)[-1]
    folder = tmp_path / "logs" / job_id
    folder.mkdir(parents=True)
    return job_id, folder


def test_a_request_reads_only_the_files_its_filter_names(store: JobStore, tmp_path: Path) -> None:
    (a, a_dir), (b, b_dir) = _job(store, tmp_path), _job(store, tmp_path)
    for folder in (a_dir, b_dir):
        for key in ("workerpool0-0", "workerpool1-0"):
            RecordLog(str(records_path(folder, key))).append("stdout", [f"{folder.name} {key}"])
    api = LogEntriesApi(store, tmp_path)
    page = api.list_entries(
        [f"projects/{PROJECT}"],
        f'resource.labels.job_id="{a}" AND resource.labels.task_name=("workerpool1-0" OR service)',
    )
    assert [text_of(e) for e in page["entries"]] == [f"{a} workerpool1-0"]
    assert set(api._indexes) == {(a, "workerpool1-0")}
    assert len(api.list_entries([f"projects/{PROJECT}"], "")["entries"]) == 4
    assert set(api._indexes) == {(job, key) for job in (a, b) for key in ("workerpool0-0", "workerpool1-0")}


def test_a_line_stamped_after_a_request_began_waits_for_the_next(store: JobStore, tmp_path: Path) -> None:
    job_id, folder = _job(store, tmp_path)
    now = time.time_ns()
    lines = [
        {"t": now - 1000, "s": "stdout", "m": "past"},
        {"t": now + 3600 * 10**9, "s": "stdout", "m": "future"},
    ]
    records_path(folder, "workerpool0-0").write_text("".join(json.dumps(r) + "\n" for r in lines))
    page = LogEntriesApi(store, tmp_path).list_entries(
        [f"projects/{PROJECT}"], f"resource.labels.job_id={job_id}"
    )
    assert [text_of(e) for e in page["entries"]] == ["past"]


def test_a_plain_log_beside_a_structured_one_is_not_read(store: JobStore, tmp_path: Path) -> None:
    job_id, folder = _job(store, tmp_path)
    (folder / "workerpool0-0.log").write_text("plain\nlines\n")
    RecordLog(str(records_path(folder, "workerpool0-0"))).append("stderr", ["structured"])
    (folder / "install-workerpool0.log").write_text("pip output\n")
    page = LogEntriesApi(store, tmp_path).list_entries(
        [f"projects/{PROJECT}"], f"resource.labels.job_id={job_id}"
    )
    assert [(e["severity"], text_of(e)) for e in page["entries"]] == [("ERROR", "structured")]
