"""A trigger's replica log stream against a scripted log poller and cursor store (no emulator, no
triggerer): what it subscribes with, when it writes, where its cursor goes, and how it finishes and
closes. The real poller and store are tests/triggers/test_log_poller.py's and
tests/operators/test_log_cursor_xcom.py's; the whole path on a stack is tests/stack/test_training_logs.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from airflow_vertex_dist.hooks.logs import LogLine
from airflow_vertex_dist.logs import trigger_stream as log_stream
from airflow_vertex_dist.logs.poller import LogCursor

KWARGS_CURSOR = LogCursor("2026-01-01T00:00:00Z", "id-0")
SAVED_CURSOR = LogCursor("2026-01-01T00:00:05Z", "id-5")
EARLIER_CURSOR = LogCursor("2025-12-31T23:59:59Z", "id-9")


def _line(n: int, severity: str = "INFO") -> LogLine:
    return LogLine("7", "workerpool0-0", None, severity, f"2026-01-01T00:00:{n:02d}Z", f"id-{n}", f"line {n}")


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self) -> list[tuple[int, str]]:
        return [(r.levelno, r.getMessage()) for r in self.records]


class Trigger:
    """What a stream reads of its trigger (``LogStreamingTrigger``)."""

    job_name = "projects/p/locations/us-central1/customJobs/7"
    conn_id = "vertex_dist_default"
    impersonation_chain = "a@p.iam.gserviceaccount.com"
    poll_interval = 3.5
    stream_logs: Any = ["workerpool0-0"]

    def __init__(self) -> None:
        self.log_timestamp, self.log_insert_id = KWARGS_CURSOR.timestamp, KWARGS_CURSOR.insert_id
        self.records = Records()
        self.log = logging.getLogger(f"test_trigger_log_stream.{id(self)}")
        self.log.setLevel(logging.DEBUG)
        self.log.addHandler(self.records)


class Subscription:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.lines: asyncio.Queue[list[LogLine]] = asyncio.Queue()
        self.left: list[LogLine] = []
        self.closed = False

    async def wait(self, timeout: float | None = None) -> list[LogLine]:
        return await self.lines.get()

    def take(self) -> list[LogLine]:
        lines, self.left = self.left, []
        return lines

    def close(self) -> None:
        self.closed = True


class Poller:
    settle = 0.25

    def __init__(self) -> None:
        self.subs: list[Subscription] = []
        self.read_through_calls: list[float] = []
        self.chains: list[Any] = []

    def subscribe(self, job_id: str, **kwargs: Any) -> Subscription:
        sub = Subscription(job_id=job_id, **kwargs)
        self.subs.append(sub)
        return sub

    async def read_through(self, when: float, timeout: float) -> bool:
        self.read_through_calls.append(timeout)
        return True


class Store:
    def __init__(self, saved: LogCursor | None = None, loaded: asyncio.Event | None = None) -> None:
        self.to_load, self.loaded = saved, loaded
        self.saved: LogCursor | None = None
        self.saves: list[LogCursor] = []
        self.flushed = self.closed = False

    async def load(self) -> LogCursor | None:
        if self.loaded is not None:
            await self.loaded.wait()
        return self.to_load

    def save(self, cursor: LogCursor) -> None:
        self.saves.append(cursor)

    async def flush(self, timeout: float) -> None:
        self.flushed = True

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def poller(monkeypatch: pytest.MonkeyPatch) -> Poller:
    scripted = Poller()

    def get_log_poller(project: str, **kwargs: Any) -> Poller:
        scripted.chains.append(list(kwargs["impersonation_chain"]))
        return scripted

    monkeypatch.setattr(log_stream, "get_log_poller", get_log_poller)
    monkeypatch.setattr(log_stream, "FINAL_LINES_GRACE_S", 0.3)
    return scripted


async def _until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_lines_are_written_as_they_come_and_the_cursor_follows_the_last(poller: Poller) -> None:
    trigger, store = Trigger(), Store()

    async def run() -> tuple[Subscription, float]:
        stream = log_stream.TriggerLogStream(trigger, store=store)  # type: ignore[arg-type]
        (sub,) = poller.subs
        assert sub.kwargs == {
            "job_id": "7",
            "selection": ["workerpool0-0"],
            "cursor": KWARGS_CURSOR,
            "interval": 3.5,
        }
        assert poller.chains == [["a@p.iam.gserviceaccount.com"]]
        sub.lines.put_nowait([_line(1), _line(2, "ERROR")])
        await _until(lambda: len(trigger.records.records) == 2)  # while the job runs, not at its end
        assert (trigger.log_timestamp, trigger.log_insert_id) == (_line(2).timestamp, "id-2")
        assert store.saves == [LogCursor.of(_line(2))]
        sub.left = [_line(3, "WARNING")]  # what the cycle that reads through the job's end hands out
        started = asyncio.get_running_loop().time()
        await stream.finish(timeout=5)
        waited = asyncio.get_running_loop().time() - started
        assert poller.read_through_calls == [5 + poller.settle] and store.flushed
        stream.close()
        return sub, waited

    sub, waited = asyncio.run(run())
    assert trigger.records.messages() == [
        (logging.INFO, "00:00:01.000Z [workerpool0-0] line 1"),
        (logging.ERROR, "00:00:02.000Z [workerpool0-0] line 2"),
        (logging.WARNING, "00:00:03.000Z [workerpool0-0] line 3"),
    ]
    assert (trigger.log_timestamp, trigger.log_insert_id) == (_line(3).timestamp, "id-3")
    assert store.saves[-1] == LogCursor.of(_line(3))
    assert waited >= 0.29  # the last lines' grace (FINAL_LINES_GRACE_S, 0.3 s here) before the trigger fires
    assert sub.closed and store.closed


@pytest.mark.parametrize(
    ("saved", "resumed"),
    [(SAVED_CURSOR, SAVED_CURSOR), (EARLIER_CURSOR, KWARGS_CURSOR)],
    ids=["saved-later", "kwargs-later"],
)
def test_a_start_resumes_after_the_later_cursor_and_a_finish_waits_for_the_start(
    poller: Poller, monkeypatch: pytest.MonkeyPatch, saved: LogCursor, resumed: LogCursor
) -> None:
    trigger = Trigger()

    async def run() -> tuple[log_stream.StartingLogStream, Store]:
        store = Store(saved, loaded=asyncio.Event())  # an XCom read that takes a while
        monkeypatch.setattr(log_stream.CursorStore, "of", classmethod(lambda cls, t: store))
        starting = log_stream.log_stream_start(trigger)  # type: ignore[arg-type]
        finishing = asyncio.create_task(starting.finish(timeout=5))
        await asyncio.sleep(0.05)  # the start and the finish run: both wait for the XCom read
        assert not finishing.done() and not poller.subs
        store.loaded.set()  # type: ignore[union-attr]
        await asyncio.wait_for(finishing, timeout=10)
        assert poller.read_through_calls  # the job's last lines were read through once it started
        starting.close()
        return starting, store

    starting, store = asyncio.run(run())
    (sub,) = poller.subs
    assert sub.kwargs["cursor"] == resumed and store.saved == resumed
    said = [message for _, message in trigger.records.messages()]
    assert said == (
        [f"Replica logs resume after {resumed} (the cursor saved before a restart)"]
        if resumed == saved
        else []
    )
    assert sub.closed and store.closed


def test_a_stream_that_cannot_start_leaves_the_wait_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_poller(project: str, **kwargs: Any) -> Poller:
        raise RuntimeError("no credentials")

    monkeypatch.setattr(log_stream, "get_log_poller", no_poller)
    trigger = Trigger()

    async def run() -> object:
        starting = log_stream.log_stream_start(trigger)  # type: ignore[arg-type]
        try:
            return await starting.started()
        finally:
            starting.close()

    assert asyncio.run(run()) is None
    assert trigger.records.messages() == [(logging.INFO, "Replica logs are not streamed: no credentials")]
