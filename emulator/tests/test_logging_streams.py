"""Replica lines in the emulator's Cloud Logging as Vertex AI writes them: severity by stream (stdout
INFO, stderr ERROR), each line stamped when it was written, JSON lines not parsed, long and unfinished
lines; read through the stock google-cloud-logging clients over gRPC and HTTP/JSON."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from logging_support import PROJECT, custom, gapic, job_filter, logging_client, text_of
from polling import poll_until

from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, grpc_client, running_emulator, wait_for_state

ENDED = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}

# What a training script writes: print() to stdout; Python logging, warnings and a tqdm-style progress
# bar to stderr; a JSON line with its own "severity"; a last line with no newline.
WRITER = """
import json, logging, sys, warnings
print("stdout line 1", flush=True)
logging.basicConfig(level=logging.INFO)
logging.info("python logging says hi")
warnings.warn("old API")
sys.stderr.write("progress  10%\\rprogress 100%\\n"); sys.stderr.flush()
print(json.dumps({"severity": "WARNING", "message": "structured"}), flush=True)
print("WARNING: a stdout line that looks like a warning", flush=True)
print("x" * (300 * 1024), flush=True)
sys.stdout.write("no newline at the end")
"""
JSON_LINE = json.dumps({"severity": "WARNING", "message": "structured"})
WARNED = "<string>:6: UserWarning: old API"  # warnings.warn's line, "-c" code having no source line
STDERR_LINES = ["INFO:root:python logging says hi", WARNED, "progress  10%\rprogress 100%"]
LEVELS = {200: "INFO", 500: "ERROR"}  # google.logging.type.LogSeverity, a plain protobuf enum


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running_emulator(tmp_path_factory.mktemp("streams")) as em:
        client = grpc_client(em)
        job = client.create_custom_job(parent=PARENT, custom_job=custom(container_job("streams", WRITER)))
        wait_for_state(client, job.name, ENDED)
        yield em, job.name.rsplit("/", 1)[-1]


def _replica_entries(em: Emulator, job_id: str) -> list[Any]:
    pager = gapic(em).list_log_entries(
        request={
            "resource_names": [f"projects/{PROJECT}"],
            "filter": job_filter(job_id, 'resource.labels.task_name="workerpool0-0"'),
            "page_size": 1000,
        }
    )
    return list(pager)


def test_stdout_lines_are_info_and_stderr_lines_error(written: Any) -> None:
    em, job_id = written
    entries = _replica_entries(em, job_id)
    level = {text_of(e): LEVELS[e.severity] for e in entries}
    for line in ["stdout line 1", JSON_LINE, "WARNING: a stdout line that looks like a warning"]:
        assert level[line] == "INFO", line
    for line in STDERR_LINES:
        assert level[line] == "ERROR", line
    assert {dict(e.json_payload)["levelname"] for e in entries} == {"INFO", "ERROR"}
    assert all(dict(e.json_payload)["levelname"] == LEVELS[e.severity] for e in entries)


def test_a_json_line_is_text_its_severity_field_not_read(written: Any) -> None:
    em, job_id = written
    entry = next(e for e in _replica_entries(em, job_id) if text_of(e) == JSON_LINE)
    assert LEVELS[entry.severity] == "INFO"
    assert set(dict(entry.json_payload)) == {"message", "levelname", "attrs"}


def test_each_stream_keeps_its_order_and_an_unfinished_line_comes_last(written: Any) -> None:
    """Within a stream, lines come in the order written (across the two streams, lines written in the
    same instant are in the order the supervisor read its two pipes: see the next test for a line
    written after another was read)."""
    em, job_id = written
    entries = _replica_entries(em, job_id)
    stdout = [text_of(e) for e in entries if LEVELS[e.severity] == "INFO"]
    stderr = [text_of(e) for e in entries if LEVELS[e.severity] == "ERROR"]
    assert stderr == STDERR_LINES
    assert stdout[:3] == ["stdout line 1", JSON_LINE, "WARNING: a stdout line that looks like a warning"]
    assert stdout[-1] == "no newline at the end"  # written when the stream closed
    stamps = [e.timestamp.timestamp_pb().ToNanoseconds() for e in entries]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)  # nanoseconds, one per line


def test_a_line_over_256_kib_keeps_its_first_256_kib(written: Any) -> None:
    em, job_id = written
    long = [text_of(e) for e in _replica_entries(em, job_id) if text_of(e).startswith("xxx")]
    assert long == ["x" * (256 * 1024)]


@pytest.mark.parametrize("grpc", [True, False], ids=["grpc", "http"])
def test_a_no_error_check_sees_the_stderr_lines(written: Any, grpc: bool) -> None:
    """What a "no ERROR entries" check finds on Vertex AI, it finds here: the stderr lines."""
    em, job_id = written
    client = logging_client(em, grpc=grpc)
    errors = list(client.list_entries(filter_=job_filter(job_id, "severity>=ERROR")))
    texts = [text_of(e) for e in errors]
    assert texts == STDERR_LINES
    assert {e.severity for e in errors} == {"ERROR"}
    assert {e.resource.labels["task_name"] for e in errors} == {"workerpool0-0"}


def test_each_line_is_stamped_when_it_is_written(tmp_path: Path) -> None:
    """A line printed before a moment is stamped before it, one printed after it after it, though the
    Logging API reads both only once the job has ended (it used to stamp lines when it first read them)."""
    code = (
        "import pathlib, time\n"
        "print('before', flush=True)\n"
        "go = pathlib.Path('go')\n"
        "deadline = time.monotonic() + 20\n"
        "while not go.exists() and time.monotonic() < deadline: time.sleep(0.01)\n"
        "print('after', flush=True)\n"
    )
    with running_emulator(tmp_path) as em:
        client = grpc_client(em)
        job = client.create_custom_job(parent=PARENT, custom_job=custom(container_job("stamps", code)))
        job_id = job.name.rsplit("/", 1)[-1]
        plain = em.config.state_dir / "logs" / job_id / "workerpool0-0.log"
        poll_until(lambda: plain.is_file() and "before" in plain.read_text(), timeout=20, interval=0.02)
        moment = time.time_ns()
        (em.config.state_dir / "work" / job_id / "workerpool0-0" / "go").touch()
        wait_for_state(client, job.name, ENDED)
        read = time.time_ns()
        stamps = {text_of(e): e.timestamp for e in _replica_entries(em, job_id)}
    before, after = (stamps[k].timestamp_pb().ToNanoseconds() for k in ("before", "after"))
    assert before < moment < after < read


def test_a_reader_resuming_after_its_cursor_misses_nothing(tmp_path: Path) -> None:
    """Two replicas print as fast as they can while a reader asks again and again for what is after
    the newest (timestamp, insertId) it has: every line arrives once, none after a newer one."""
    count = 400
    marks = tmp_path / "marks"
    marks.mkdir()
    code = (
        "import json, os, pathlib, time\n"
        f"for i in range({count}):\n    print(f'line {{i}}', flush=True)\n"
        f"marks = pathlib.Path({str(marks)!r})\n"
        "task = json.loads(os.environ['CLUSTER_SPEC'])['task']\n"
        "(marks / task['type']).touch()\n"
        "deadline = time.monotonic() + 30\n"  # the primary ends the job once the worker is done
        "while task['type'] == 'workerpool0' and len(list(marks.iterdir())) < 2:\n"
        "    if time.monotonic() > deadline: break\n"
        "    time.sleep(0.01)\n"
    )
    with running_emulator(tmp_path) as em:
        client = grpc_client(em)
        job = client.create_custom_job(
            parent=PARENT, custom_job=custom(container_job("race", code, workers=1))
        )
        job_id = job.name.rsplit("/", 1)[-1]
        seen: list[tuple[int, str, str, str]] = []
        keys: set[tuple[int, str]] = set()

        def read_more() -> bool:
            base = job_filter(job_id, 'resource.labels.task_name!="service"')
            stamp = seen[-1][0] if seen else 0
            text = base + (f' AND timestamp>="{_rfc3339(stamp)}"' if seen else "")
            for e in gapic(em).list_log_entries(
                request={"resource_names": [f"projects/{PROJECT}"], "filter": text, "page_size": 1000}
            ):
                key = (e.timestamp.timestamp_pb().ToNanoseconds(), e.insert_id)
                if seen and key <= seen[-1][:2]:
                    assert key in keys, f"{key} arrived after {seen[-1][:2]}"
                    continue
                keys.add(key)
                seen.append((*key, e.resource.labels["task_name"], text_of(e)))
            done = client.get_custom_job(name=job.name).state.name in ENDED
            return done and len(seen) >= 2 * count

        poll_until(read_more, timeout=60, interval=0.01)
    for task in ("workerpool0-0", "workerpool1-0"):
        assert [s[3] for s in seen if s[2] == task] == [f"line {i}" for i in range(count)]


def _rfc3339(nanos: int) -> str:
    from vertex_emulator.core.timefmt import format_rfc3339_nanos

    return format_rfc3339_nanos(nanos)
