"""The worker-slot stream and the failure quote, against a scripted logs hook (no emulator): what each
read asks Cloud Logging for, which lines a stream takes and which the quote leaves out."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airflow_vertex_dist.hooks.logs import LogLine
from airflow_vertex_dist.logs.worker_stream import (
    LogStreamer,
    failing_replica,
    failure_details,
    selection_of,
    shown_by,
)

JOB = {
    "name": "projects/p/locations/us-central1/customJobs/7",
    "error": {"message": "The replica workerpool1-12 exited with a non-zero status of 1."},
}


def _line(
    n: int, replica: str = "workerpool0-0", severity: str = "INFO", trial: str | None = None
) -> LogLine:
    return LogLine("7", replica, trial, severity, f"2026-01-01T00:00:{n:02d}Z", f"id-{n}", f"line {n}")


class ScriptedHook:
    """``list_page`` answers from ``pages`` (every read starts at the first page, as Cloud Logging
    answers a filter whose ``timestamp>=`` is the cursor's), recording each filter and token asked."""

    def __init__(self, *pages: list[LogLine], error: Exception | None = None) -> None:
        self.pages = list(pages)
        self.error = error
        self.asked: list[tuple[str, str]] = []

    def list_page(self, text: str, page_size: int = 1000, page_token: str = "") -> tuple[list[LogLine], str]:
        self.asked.append((text, page_token))
        if self.error is not None:
            raise self.error
        index = int(page_token or 0)
        return self.pages[index], str(index + 1) if index + 1 < len(self.pages) else ""


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def log() -> Any:
    logger = logging.getLogger("test_log_streamer")
    handler = Records()
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)


@pytest.fixture(autouse=True)
def no_settle_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS", "0")


def test_a_read_follows_every_page_once_then_goes_on_after_its_cursor(log: Records) -> None:
    hook = ScriptedHook([_line(1), _line(2)], [_line(3, severity="ERROR")])
    streamer = LogStreamer(hook, "7", "all", logging.getLogger("test_log_streamer"), min_interval_s=0)
    assert streamer.poll() == 3
    assert [token for _, token in hook.asked] == ["", "1"]  # both pages, and no read past the last
    assert [(r.levelno, r.getMessage()) for r in log.records] == [
        (logging.INFO, "00:00:01.000Z [workerpool0-0] line 1"),
        (logging.INFO, "00:00:02.000Z [workerpool0-0] line 2"),
        (logging.ERROR, "00:00:03.000Z [workerpool0-0] line 3"),
    ]
    hook.pages[1].append(_line(4))
    assert streamer.poll() == 1  # the lines already written are not written again
    assert 'timestamp>="2026-01-01T00:00:03Z"' in hook.asked[2][0]  # the read starts at the cursor
    assert log.records[-1].getMessage() == "00:00:04.000Z [workerpool0-0] line 4"


def test_lines_of_one_instant_are_told_apart_by_their_insert_id() -> None:
    first, second = (
        LogLine("7", "workerpool0-0", None, "INFO", "2026-01-01T00:00:01Z", f"id-{c}", f"line {c}")
        for c in "ab"
    )
    hook = ScriptedHook([first])
    streamer = LogStreamer(hook, "7", "all", logging.getLogger("test_log_streamer"), min_interval_s=0)
    assert streamer.poll() == 1
    hook.pages[0].append(second)  # written in the same instant, read later
    assert streamer.poll() == 1
    assert streamer.poll() == 0


def test_a_read_waits_for_the_interval_unless_the_wait_has_its_verdict() -> None:
    hook = ScriptedHook([_line(1)])
    streamer = LogStreamer(hook, "7", "all", logging.getLogger("test_log_streamer"), min_interval_s=60)
    assert streamer.poll() == 1
    assert streamer.poll() == 0 and len(hook.asked) == 1  # within the interval: no read
    hook.pages[0].append(_line(2))
    assert streamer.poll(force=True) == 1 and len(hook.asked) == 2


def test_a_failed_read_is_logged_and_the_wait_goes_on(log: Records) -> None:
    hook = ScriptedHook(error=RuntimeError("quota"))
    streamer = LogStreamer(hook, "7", "all", logging.getLogger("test_log_streamer"), min_interval_s=0)
    assert streamer.poll() == 0
    (record,) = log.records
    assert record.levelno == logging.WARNING and "Reading replica logs failed (quota)" in record.getMessage()


def test_which_lines_a_selection_wrote_to_the_task_log() -> None:
    primary, worker = _line(1), _line(2, replica="workerpool1-0")
    warning, error = _line(3, "workerpool1-0", "WARNING"), _line(4, "workerpool1-0", "ERROR")
    default = shown_by("default")
    assert [default(line) for line in (primary, worker, warning, error)] == [True, False, True, True]
    assert shown_by("all")(worker) and not shown_by(None)(primary)
    chosen = shown_by(["workerpool1-0"])
    assert chosen(worker) and not chosen(primary)
    assert chosen(_line(5, "workerpool1-0", trial="3"))  # a trial's replica: keyed "trial 3/workerpool1-0"


def test_the_failing_replica_and_what_is_quoted_of_it() -> None:
    assert failing_replica(JOB) == "workerpool1-12"
    assert failing_replica({"error": {"message": "Replica workerpool10-0 exited"}}) == "workerpool10-0"

    def unreadable(job_id: str, replica: str, n: int) -> list[LogLine]:
        raise RuntimeError("permission denied")

    assert failure_details(JOB, unreadable) == (
        "\n(the last lines of workerpool1-12 could not be read from Cloud Logging: permission denied)"
    )
    assert failure_details(JOB, lambda *_: []) == "\nworkerpool1-12 wrote nothing to Cloud Logging."
    lines = [_line(1, "workerpool1-12"), _line(2, "workerpool1-12", "ERROR")]
    quoted = failure_details(JOB, lambda *_: lines, shown_by("default"))
    assert quoted == "\nLast lines of workerpool1-12 (Cloud Logging):\nline 1"  # the ERROR line was streamed
    assert failure_details(JOB, lambda *_: lines, shown_by("all")) == (
        "\nThe last lines of workerpool1-12 are the replica lines above in this log."
    )


def test_a_pool_pattern_needs_the_job() -> None:
    with pytest.raises(ValueError, match="stream_logs: a pool pattern needs the job to expand it"):
        selection_of(["workerpool1-*"])
