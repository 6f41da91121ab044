"""Log lines the Logging API reads back (runtime/log_records.py) as a parser of untrusted input: a replica
prints anything, and a record may be planted in ``<state_dir>/logs``.

A line nested past the JSON parser's recursion, a line longer than any record, a planted record whose
time no 64-bit index holds or whose text UTF-8 cannot carry: each is served as text or skipped, never a
500, and the lines after it are served. Indexing and reading a file cost at most a small multiple of a
benign file of the same size, and a huge line is never held in memory whole.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from logging_support import gapic
from probes import JSON, PARENT, Http, answer, assert_linear, record

from vertex_emulator.app import Emulator
from vertex_emulator.runtime.log_records import MAX_RECORD_BYTES, RecordIndex, records_path
from vertex_emulator.runtime.replica_output import MAX_LINE_BYTES, RecordLog

PROJECT = PARENT.split("/")[1]
NESTED = 100_000


def job_logs(em: Emulator) -> tuple[str, Path]:
    """A job of ``em`` and its log folder, where its replicas' records go."""
    job = em.store.insert("customJobs", PARENT, {"displayName": "lines"})
    job_id = str(job["name"]).rsplit("/", 1)[-1]
    folder = Path(em.config.state_dir) / "logs" / job_id
    folder.mkdir(parents=True)
    return job_id, folder


def messages_rest(web: Http, job_id: str) -> tuple[int, Any]:
    body = json.dumps(
        {"resourceNames": [f"projects/{PROJECT}"], "filter": f"resource.labels.job_id={job_id}"}
    )
    status, data = web.request("POST", "/v2/entries:list", body.encode(), JSON)
    if status != 200:
        return status, data
    return status, [entry["jsonPayload"]["message"] for entry in data.get("entries", [])]


def messages_grpc(em: Emulator, job_id: str) -> list[str]:
    request = {"resource_names": [f"projects/{PROJECT}"], "filter": f"resource.labels.job_id={job_id}"}
    return [entry.json_payload["message"] for entry in gapic(em).list_log_entries(request=request)]


def test_a_nested_line_is_served_as_text_and_the_lines_after_it_too(emulator: Emulator, web: Http) -> None:
    job_id, folder = job_logs(emulator)
    path = records_path(folder, "workerpool0-0")
    log = RecordLog(str(path))
    log.append("stdout", ["before", "[" * NESTED])  # a replica printing 100,000 brackets
    log.close()
    t = log.last
    planted = [
        # a record nested deeper than the JSON parser recurses
        b'{"t":%d,"s":"stdout","m":"x","x":' % (t + 1) + b"[" * NESTED + b"]" * NESTED + b"}",
        b'{"t":%d,"s":"stdout","m":"x"}' % 10**30,  # a time no 64-bit index holds
        b'{"t":%d,"s":"stdout","m":"lone \\ud800"}' % (t + 2),  # JSON, but no UTF-8 text
        b"{" * (MAX_RECORD_BYTES + 1),  # longer than any record
        b'{"t":%d,"s":"stdout","m":"after"}' % (t + 3),
    ]
    with open(path, "ab") as fh:
        fh.write(b"".join(line + b"\n" for line in planted))
    expected = ["before", "[" * NESTED, "lone ?", "after"]
    status, served = messages_rest(web, job_id)
    assert (status, served) == (200, expected), (status, str(served)[:300])
    assert messages_grpc(emulator, job_id) == expected
    record(
        "nested_log_line",
        "entries.list over a replica line of 100,000 '[' and planted records: nested 100,000 deep, t=10^30, "
        "a lone \\ud800, a 1.6 MiB line; then a line (REST and gRPC)",
        f"{status}: the printed line served as text, the planted ones skipped or '?', the line after "
        "served (was 500 INTERNAL, for every later request reading the file too)",
    )


def test_a_huge_line_is_skipped_unread_and_never_held_whole(tmp_path: Path) -> None:
    path = tmp_path / "workerpool0-0.jsonl"
    log = RecordLog(str(path))
    log.append("stdout", ["before", "y" * MAX_LINE_BYTES])  # the longest line a supervisor writes
    with open(path, "ab") as fh:
        for _ in range(32):  # a 32 MiB line, planted
            fh.write(b"x" * (1024 * 1024))
        fh.write(b"\n")
    log.append("stdout", ["after"])
    log.close()
    index = RecordIndex(path)
    tracemalloc.start()
    try:
        index.refresh()
        texts = [r.text for r in index.read(0, len(index))]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert texts == ["before", "y" * MAX_LINE_BYTES, "after"] and index.skipped == 1
    assert peak < 4 * MAX_RECORD_BYTES + 2 * 1024 * 1024, peak  # a block and a record or two, not 32 MiB


# -- reading records: the ratio test -----------------------------------------------------------------

SIZE = 1024 * 1024


def _records(size: int, line: Callable[[int], bytes]) -> bytes:
    out, total, i = [], 0, 0
    while total < size:
        out.append(line(i) + b"\n")
        total += len(out[-1])
        i += 1
    return b"".join(out)[:size]


def benign_records(size: int) -> bytes:
    """Records as a supervisor writes them: a training loop's lines."""
    start = 1_767_225_600_000_000_000
    return _records(
        size,
        lambda i: (
            b'{"t":%d,"s":"stdout","m":"step %d: loss=0.%04d lr=0.001 examples/s=1234.5"}'
            % (start + i, i, i % 10_000)
        ),
    )


ADVERSARIAL_RECORDS: dict[str, Callable[[], bytes]] = {
    "nested": lambda: _records(
        SIZE, lambda i: b'{"t":%d,"s":"stdout","m":"x","x":' % i + b"[" * 3000 + b"]" * 3000 + b"}"
    ),
    "surrogates": lambda: _records(
        SIZE, lambda i: b'{"t":%d,"s":"stdout","m":"' % i + b"\\ud800" * 10 + b'"}'
    ),
    "escapes": lambda: _records(SIZE, lambda i: b'{"t":%d,"s":"stdout","m":"' % i + b"\\u0001" * 10 + b'"}'),
    "huge_times": lambda: _records(SIZE, lambda i: b'{"t":1' + b"0" * 200 + b',"s":"stdout","m":"x"}'),
    "torn": lambda: _records(SIZE, lambda i: b'{"t":%d,"s":"std' % i),
    "empty_lines": lambda: b"\n" * SIZE,
    "short_lines": lambda: b"x\n" * (SIZE // 2),
    "one_line": lambda: b"x" * (SIZE - 1) + b"\n",
}


def read_all(path: Path) -> int:
    """What a first request does with a file: index it, then read every record back."""
    index = RecordIndex(path)
    index.refresh()
    return sum(1 for _ in index.read(0, len(index)))


@pytest.mark.parametrize("kind", sorted(ADVERSARIAL_RECORDS))
def test_reading_records_costs_no_more_than_a_benign_file_of_its_size(kind: str, tmp_path: Path) -> None:
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    bad.write_bytes(ADVERSARIAL_RECORDS[kind]())
    good.write_bytes(benign_records(bad.stat().st_size))
    assert read_all(good) > 10_000
    assert_linear(lambda: read_all(bad), lambda: read_all(good), f"records {kind}")


def test_an_answer_is_never_a_500_for_any_planted_line(emulator: Emulator, web: Http) -> None:
    job_id, folder = job_logs(emulator)
    lines = [kind().split(b"\n")[0] for kind in ADVERSARIAL_RECORDS.values()]
    records_path(folder, "workerpool0-0").write_bytes(b"\n".join(lines) + b"\n")
    status, data = messages_rest(web, job_id)
    assert status == 200, answer(status, data)
