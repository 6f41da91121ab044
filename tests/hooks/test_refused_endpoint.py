"""A connection whose endpoint refuses connections (a real closed port on loopback).

An emulator connection fails within seconds, naming the connection, the address and the command that
starts the emulator there; any other connection keeps retrying a refused connection as transient, each
warning naming the connection, the attempt and the call's deadline. The time bounds are hang guards
(generous); the timings themselves are a benchmark's business.
"""

from __future__ import annotations

import json
import re
import socket
import time

import pytest
from google.api_core.exceptions import RetryError

from airflow_vertex_dist.hooks._clients import is_transient
from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.poll_loop import is_transient as poller_is_transient
from airflow_vertex_dist.hooks.retry_warnings import (
    EMULATOR_START_GRACE_S,
    EmulatorNotRunningError,
    emulator_command,
)
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook, VertexJobsHook

#: Far below the default retry deadline (300 s): a hang guard, not a timing goal.
HANG_GUARD_S = 60.0
BODY = {
    "displayName": "refused",
    "jobSpec": {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": "1",
                "containerSpec": {"imageUri": "python:3.11"},
            }
        ]
    },
}


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _connect(monkeypatch: pytest.MonkeyPatch, conn_id: str, extra: dict[str, object]) -> None:
    extra = {"project": "test-project", "location": "us-central1", **extra}
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "vertex_dist", "extra": extra})
    )


def _address(transport: str, port: int) -> str:
    return f"127.0.0.1:{port}" if transport == "grpc" else f"http://127.0.0.1:{port}"


def _retry_lines(capfd: pytest.CaptureFixture[str]) -> list[str]:
    """The hooks' retry warnings printed so far (Airflow's log output), each from its message on."""
    out, err = capfd.readouterr()
    start = "Vertex AI call on connection"
    return [line[line.index(start) :] for line in (out + err).splitlines() if start in line]


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_an_emulator_that_is_not_running_fails_within_seconds_and_says_how_to_start_it(
    transport: str, closed_port: int, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    address = _address(transport, closed_port)
    _connect(monkeypatch, "local_emu", {"transport": transport, "api_endpoint": address, "emulator": True})
    started = time.monotonic()
    with VertexJobsHook("local_emu") as hook, pytest.raises(EmulatorNotRunningError) as raised:
        hook.list_jobs("customJobs")  # the default policy: a 300 s deadline
    assert time.monotonic() - started < HANG_GUARD_S
    message = str(raised.value)
    flag = "--grpc-port" if transport == "grpc" else "--rest-port"
    assert f"connection 'local_emu': nothing listens at {address} (connection refused)" in message
    assert "the emulator is not running there" in message
    assert f"start it with `vertex-emulator {flag} {closed_port}`" in message
    # no chain of the refused attempts' gRPC or requests errors before it: its message says it all
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__
    lines = _retry_lines(capfd)
    assert lines, "no warning while the emulator had time to start"
    for number, line in enumerate(lines, start=1):
        assert line.startswith(
            f"Vertex AI call on connection 'local_emu': attempt {number} refused at {address}"
        )
        assert f"trying again for up to {EMULATOR_START_GRACE_S:.0f} s" in line


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_create_on_an_emulator_that_is_not_running_fails_the_same_way(
    transport: str, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Create is never retried by api_core (its re-send waits for a token lookup): it fails as fast."""
    address = _address(transport, closed_port)
    _connect(monkeypatch, "local_emu", {"transport": transport, "api_endpoint": address, "emulator": True})
    started = time.monotonic()
    with (
        VertexJobsHook("local_emu") as hook,
        pytest.raises(EmulatorNotRunningError, match="not running there"),
    ):
        hook.create_custom_job(BODY)
    assert time.monotonic() - started < HANG_GUARD_S


async def test_the_asyncio_hook_fails_the_same_way(closed_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    address = _address("grpc", closed_port)
    _connect(monkeypatch, "local_emu", {"api_endpoint": address, "emulator": True})
    started = time.monotonic()
    async with VertexJobsAsyncHook("local_emu") as hook:
        with pytest.raises(EmulatorNotRunningError, match=f"vertex-emulator --grpc-port {closed_port}"):
            await hook.get_job("projects/test-project/locations/us-central1/customJobs/1")
    assert time.monotonic() - started < HANG_GUARD_S


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_refused_tls_endpoint_is_retried_and_every_warning_names_connection_attempt_and_deadline(
    transport: str, closed_port: int, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Not the emulator (an endpoint override, as Google's are reached): a refused connection stays
    transient, retried until the deadline."""
    address = f"127.0.0.1:{closed_port}" if transport == "grpc" else f"https://127.0.0.1:{closed_port}"
    extra = {"transport": transport, "api_endpoint": address, "emulator": False, "is_anonymous": True}
    extra["trusted_endpoint_hosts"] = "127.0.0.1"  # a loopback stand-in for a Private Service Connect address
    _connect(monkeypatch, "psc_endpoint", extra)
    policy = RetryPolicy(initial_s=0.05, maximum_s=0.1, deadline_s=1.0, rpc_timeout_s=5.0)
    with VertexJobsHook("psc_endpoint", retry_policy=policy) as hook, pytest.raises(RetryError) as raised:
        hook.list_jobs("customJobs")
    assert not isinstance(raised.value.cause, EmulatorNotRunningError)
    lines = _retry_lines(capfd)
    assert len(lines) >= 2
    pattern = re.compile(
        r"Vertex AI call on connection 'psc_endpoint': attempt (\d+) failed with a transient error, "
        r"retrying until (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC \(the call's deadline\): "
        r".*[Cc]onnection refused"
    )
    matches = [pattern.match(line) for line in lines]
    assert all(matches), lines
    assert [int(m[1]) for m in matches if m] == list(range(1, len(lines) + 1))
    assert len({m[2] for m in matches if m}) == 1  # one call, one deadline


def test_the_command_names_the_host_unless_it_is_loopback() -> None:
    assert emulator_command("127.0.0.1:8781", "grpc") == "vertex-emulator --grpc-port 8781"
    assert emulator_command("http://localhost:8780", "rest") == "vertex-emulator --rest-port 8780"
    assert emulator_command("emulator.internal:9000", "grpc") == (
        "vertex-emulator --host emulator.internal --grpc-port 9000"
    )


def test_the_poller_waits_through_an_emulator_restart_but_a_call_does_not() -> None:
    error = EmulatorNotRunningError("c", "127.0.0.1:1", "grpc")
    assert poller_is_transient(error) and not is_transient(error)


def test_a_refusal_after_the_grace_is_not_called_not_running_while_the_port_listens(closed_port: int) -> None:
    """A gRPC channel keeps failing fast for its reconnect backoff after a server started: past the
    grace, a refusal while the address accepts a TCP connection is retried, not called "not running"."""
    import logging

    from airflow_vertex_dist.hooks.retry_warnings import RetryWarnings, listens

    refused = ConnectionRefusedError("Connection refused")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"
        assert listens(address)
        hook = RetryWarnings(
            logging.getLogger(__name__), "local_emu", address, deadline_s=60, emulator=True, transport="grpc"
        )
        hook.started -= EMULATOR_START_GRACE_S + 1
        hook(refused)  # retried: something listens there
        assert hook.attempt == 1
    gone = RetryWarnings(
        logging.getLogger(__name__),
        "local_emu",
        _address("grpc", closed_port),
        deadline_s=60,
        emulator=True,
        transport="grpc",
    )
    gone.started -= EMULATOR_START_GRACE_S + 1
    assert not listens(_address("grpc", closed_port))
    with pytest.raises(EmulatorNotRunningError, match="nothing listens"):
        gone(refused)
