"""Transport-level errors are transient on both transports, with the same backoff.

Over REST (``transport="rest"``, documented for the real service) a refused connection or a read
timeout arrives as a ``requests`` exception, not as an API error: it used to end the call (and, in
the shared poller, every deferred task on the triggerer) at once. gRPC reports the same faults as
UNAVAILABLE / DEADLINE_EXCEEDED.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import requests
from google.api_core import exceptions

from airflow_vertex_dist.hooks._clients import is_transient
from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.poll_loop import is_transient as poller_is_transient
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults

FAST_RETRY = RetryPolicy(initial_s=0.05, maximum_s=0.2, deadline_s=30.0, rpc_timeout_s=10.0)


def poll(check: Callable[[], bool], *, timeout: float = 30.0, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"not reached within {timeout:g}s: {what}")
        time.sleep(0.02)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _connect(monkeypatch: pytest.MonkeyPatch, transport: str, endpoint: str) -> None:
    extra = {
        "project": "test-project",
        "location": "us-central1",
        "transport": transport,
        "api_endpoint": endpoint,
        "emulator": True,
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT", json.dumps({"conn_type": "vertex_dist", "extra": extra})
    )


def observe_retries(
    monkeypatch: pytest.MonkeyPatch, hook: VertexJobsHook, on_error: Callable[[Exception], None]
) -> None:
    """Call ``on_error`` with each error the hook's retries retry, after the hook's own ``on_error``
    (``RetryWarnings``: its warning, and an absent emulator's error)."""
    made = hook._retry_warnings

    def warnings(*args: Any, **kwargs: Any) -> Callable[[Exception], None]:
        own = made(*args, **kwargs)

        def both(exc: Exception) -> None:
            own(exc)
            on_error(exc)

        return both

    monkeypatch.setattr(hook, "_retry_warnings", warnings)


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_refused_connection_is_retried_until_the_service_is_back(
    transport: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stack: ExitStack
) -> None:
    """The emulator is down at the first call (connection refused) and starts after it failed, within
    the time an emulator connection gives an emulator to start (``EMULATOR_START_GRACE_S``)."""
    port = _free_port()
    endpoint = f"127.0.0.1:{port}" if transport == "grpc" else f"http://127.0.0.1:{port}"
    _connect(monkeypatch, transport, endpoint)
    errors: list[Exception] = []
    hook = stack.enter_context(VertexJobsHook(retry_policy=FAST_RETRY))

    def on_error(exc: Exception) -> None:
        errors.append(exc)
        if len(errors) == 1:  # the service comes back
            ports = {"grpc_port": port} if transport == "grpc" else {"rest_port": port}
            stack.enter_context(testing.running_emulator(tmp_path, **ports))

    observe_retries(monkeypatch, hook, on_error)
    assert hook.list_jobs("customJobs") == []
    expected = exceptions.ServiceUnavailable if transport == "grpc" else requests.exceptions.ConnectionError
    assert isinstance(errors[0], expected), repr(errors[0])


def test_a_read_timeout_is_retried(em: Emulator, transport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer takes longer than the call's timeout once (REST: requests' ReadTimeout; gRPC:
    DEADLINE_EXCEEDED); the retry gets it."""
    calls = {"started": 0, "ended": 0}
    original = em.service.call

    def counted(method: str, request: Any) -> Any:
        calls["started"] += 1
        try:
            return original(method, request)
        finally:
            calls["ended"] += 1

    monkeypatch.setattr(em.service, "call", counted)
    update_faults(em.config.faults, {"latency_s": 1.0})
    errors: list[Exception] = []
    policy = RetryPolicy(initial_s=0.05, maximum_s=0.2, deadline_s=30.0, rpc_timeout_s=0.3)
    hook = VertexJobsHook(retry_policy=policy)

    def on_error(exc: Exception) -> None:
        errors.append(exc)
        update_faults(em.config.faults, {"latency_s": 0.0})

    observe_retries(monkeypatch, hook, on_error)
    with hook:
        hook.list_jobs("customJobs", filter='display_name="nothing-here"')
    expected = exceptions.DeadlineExceeded if transport == "grpc" else requests.exceptions.Timeout
    assert len(errors) >= 1 and isinstance(errors[0], expected), errors
    # The slow call the client gave up on still runs in the emulator: let it end before the next test.
    poll(lambda: calls["ended"] == calls["started"], what="the abandoned call ended")


@pytest.mark.parametrize(
    "exc",
    [
        requests.exceptions.ConnectionError("refused"),
        requests.exceptions.ReadTimeout("slow"),
        requests.exceptions.ConnectTimeout("slow"),
        exceptions.BadGateway("proxy"),
        exceptions.ServiceUnavailable("down"),
        exceptions.InternalServerError("oops"),
    ],
)
def test_the_shared_poller_treats_transport_errors_as_transient(exc: Exception) -> None:
    """The poller's rule is the hooks' one: a transient error never ends the deferred tasks' waits."""
    assert is_transient(exc) and poller_is_transient(exc)


@pytest.mark.parametrize(
    "exc", [exceptions.MethodNotImplemented("no"), exceptions.InvalidArgument("bad"), ValueError("x")]
)
def test_other_errors_are_not_transient(exc: Exception) -> None:
    assert not is_transient(exc) and not poller_is_transient(exc)
