"""The listener never stalls its caller: cancellations run on a bounded background worker.

The scheduler fires the run listeners inside its loop (a ``dagrun_timeout``), the API server inside
the user's request. With the API unreachable each cancel retried for up to 15 s in the caller: a run
with 40 owned jobs held the scheduler's loop for 10 minutes. Here 40 owner records point at a port
nobody listens on; the listener calls must return while the worker is held, then the worker keeps
its per-run budget.

The owner records are served by replacing ``_owner_records`` (the XCom read) and the tasks' rendered
fields (which name their connection) by replacing ``_task_fields``; the real reads are exercised by
``test_user_actions``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import pytest

from airflow_vertex_dist import listeners
from airflow_vertex_dist.hooks.connection import RetryPolicy

JOBS = 40


def _dead_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    extra = {"project": "p", "location": "us-central1", "api_endpoint": f"127.0.0.1:{port}", "emulator": True}
    monkeypatch.setenv("AIRFLOW_CONN_UNREACHABLE", json.dumps({"conn_type": "vertex_dist", "extra": extra}))


def _records(dag_id: str, run_id: str, task_id: str | None = None, map_index: int = -1) -> list[Any]:
    base = "projects/p/locations/us-central1/customJobs/"
    return [
        {"task_id": f"t{i}", "map_index": -1, "value": {"name": f"{base}{1000 + i}", "conn_id": "x"}}
        for i in range(JOBS)
    ]


@pytest.fixture
def unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    _dead_endpoint(monkeypatch)
    monkeypatch.setattr(listeners, "_owner_records", _records)
    monkeypatch.setattr(listeners, "_task_fields", lambda key: {"vertex_dist_conn_id": "unreachable"})


class Run:
    dag_id = "budget_dag"
    run_id = "scheduled__2026-01-01T00:00:00+00:00"


def test_the_listener_returns_at_once_with_40_owned_jobs_and_the_api_unreachable(
    unreachable: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(listeners, "RUN_BUDGET_S", 1.0)
    worker = listeners.CancelWorker()
    monkeypatch.setattr(listeners, "CANCELLER", worker)
    # Both worker threads are held until the calls are over: a listener that waited for any of its
    # cancels (or for room on the worker) would never return, whatever the machine's speed.
    gate = threading.Event()
    for _ in range(worker.threads):
        assert worker.submit("hold the worker", gate.wait)
    listener = listeners.ManualStateListener()
    took: list[float] = []

    def five_runs() -> None:  # five runs timing out in a row, as the scheduler's loop would fire them
        for _ in range(5):
            started = time.monotonic()
            listener.on_dag_run_failed(dag_run=Run(), msg="timed_out")
            took.append(time.monotonic() - started)

    caller = threading.Thread(target=five_runs, name="scheduler-loop")
    caller.start()
    caller.join(timeout=120)
    returned = not caller.is_alive()
    gate.set()
    assert returned, "the listener call waited for its cancels: it must hand them to the worker"
    assert len(took) == 5
    with capsys.disabled():
        print(f"\nlistener call with {JOBS} owned jobs, API unreachable: max {max(took) * 1000:.1f} ms")
    assert worker.wait_idle(timeout=60)


def test_a_runs_cancels_stay_within_its_budget(
    unreachable: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(
        listeners,
        "CANCEL_RETRY",
        RetryPolicy(initial_s=0.05, maximum_s=0.2, deadline_s=15.0, rpc_timeout_s=5.0),
    )
    started = time.monotonic()
    cancelled = listeners.cancel_run_jobs(Run(), "run failed (timed_out)", budget_s=2.0)
    took = time.monotonic() - started
    print(f"\n{JOBS} cancels with the API unreachable, budget 2 s: {took:.1f} s")
    assert cancelled == []
    # the budget holds: 40 cancels each retried for their 15 s deadline would take 600 s; this is the
    # 2 s budget plus the calls under way when it ran out (a liveness bound, loose for a loaded host)
    assert took < 30.0
    # Each attempted cancel retries until the budget's deadline (at least 0.1 s each), so how many get
    # a try before it is spent depends on the machine's speed; every job is accounted for either way,
    # and once the first one has used up the budget, most are not even tried.
    messages = [record.getMessage() for record in caplog.records]
    spent = sum("not cancelled: the run's 2s budget is spent" in m for m in messages)
    failed = sum(
        m.startswith("run failed (timed_out): cancelling job ") and m.endswith(" failed") for m in messages
    )
    assert spent + failed == JOBS, caplog.text
    assert spent >= JOBS // 2, caplog.text


def test_a_full_queue_drops_and_logs_instead_of_blocking() -> None:
    worker = listeners.CancelWorker(threads=1, max_queued=1)
    gate = __import__("threading").Event()
    assert worker.submit("first", gate.wait)
    # the thread may or may not have taken "first" yet: fill the queue, then one more is refused
    accepted = [worker.submit(f"job {i}", lambda: None) for i in range(3)]
    assert accepted.count(False) >= 1
    gate.set()
    assert worker.wait_idle(timeout=10)
