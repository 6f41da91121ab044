"""Ceilings that protect the host: connections, threads and deadlines on every listener, tested with
real sockets on loopback; and chunked bodies, refused rather than smuggled.

The emulator here has small ceilings (8 connections per HTTP listener, 1 s deadlines) so that the
tests are quick; the defaults are in ``EmulatorConfig`` and docs/emulator.md. The gRPC port has no
connection ceiling of its own (gRPC's ``grpc.max_allowed_incoming_connections`` refuses new
connections, which would let idle ones lock the stock client out): idle sockets hold no thread
there, and every connection with no call, whether or not it finished its HTTP/2 handshake, is closed
after ``idle_timeout_s`` (``grpc.max_connection_idle_ms``).
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from urllib.parse import urlsplit

import pytest
from probes import JOBS, job_bytes, job_count, record

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Faults

MAX_CONNECTIONS = 8
TIMEOUT_S = 1.0
#: how long a test waits for what should take TIMEOUT_S (a loaded machine is slow, not this slow).
DEADLINE_S = 8.0


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with testing.running_emulator(
        tmp_path_factory.mktemp("ceilings"),
        faults=Faults(queued_s=3600),
        max_connections=MAX_CONNECTIONS,
        idle_timeout_s=TIMEOUT_S,
        header_timeout_s=TIMEOUT_S,
        body_timeout_s=TIMEOUT_S,
    ) as em:
        yield em


def address(endpoint: str) -> tuple[str, int]:
    url = urlsplit(endpoint)
    return str(url.hostname), int(url.port or 80)


def listeners(em: Emulator) -> dict[str, tuple[str, int]]:
    assert em.config.storage_endpoint is not None
    return {"rest": address(em.rest_endpoint), "storage": address(em.config.storage_endpoint)}


def get(where: tuple[str, int], path: str, timeout: float = DEADLINE_S) -> int:
    conn = http.client.HTTPConnection(*where, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``sock`` (EOF or reset), or None if it is still open then."""
    started = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass  # an answer (a 408 or 400) before the close is allowed
    except TimeoutError:
        return None
    except OSError:
        pass  # reset: closed
    return time.monotonic() - started


PATHS = {"rest": "/emulator/stats", "storage": "/storage/v1/b/nobucket"}


@pytest.mark.parametrize("which", ["rest", "storage"])
def test_idle_sockets_cannot_take_a_listener_down(bounded: Emulator, which: str) -> None:
    where = listeners(bounded)[which]
    with ExitStack() as stack:
        idle = []
        for _ in range(1100):
            sock = stack.enter_context(socket.create_connection(where, timeout=DEADLINE_S))
            idle.append(sock)
        started = time.monotonic()
        status = get(where, PATHS[which])
        seconds = time.monotonic() - started
        assert status in (200, 404), status
        server = bounded._rest._server if which == "rest" else bounded._storage._httpd  # type: ignore[union-attr]
        assert server.open_connections() <= MAX_CONNECTIONS
    record(
        f"idle_sockets_{which}",
        f"1,100 idle sockets to the {'REST' if which == 'rest' else 'Cloud Storage'} port, then a GET",
        f"answered in {seconds * 1000:.0f} ms; at most {MAX_CONNECTIONS} connections held "
        "(max_connections; the longest idle is closed for a new one)",
    )


@pytest.mark.parametrize("which", ["rest", "storage"])
def test_an_idle_connection_is_closed_after_the_idle_timeout(bounded: Emulator, which: str) -> None:
    with socket.create_connection(listeners(bounded)[which]) as sock:
        seconds = closed_within(sock, DEADLINE_S)
    assert seconds is not None and seconds >= TIMEOUT_S * 0.5, seconds


@pytest.mark.parametrize("which", ["rest", "storage"])
def test_a_trickling_request_is_cut_off_by_the_header_timeout(bounded: Emulator, which: str) -> None:
    where = listeners(bounded)[which]
    with socket.create_connection(where) as sock:
        sock.sendall(f"GET {PATHS[which]} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode())
        started = time.monotonic()
        sent = 0
        sock.settimeout(0.25)
        closed = False
        while time.monotonic() - started < DEADLINE_S:
            try:
                sock.sendall(b"X")  # one byte of a header that never ends, every 0.25 s
                sent += 1
                if sock.recv(65536) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break
        seconds = time.monotonic() - started
    assert closed, f"still open after {seconds:.1f} s of trickling"
    record(
        f"trickle_{which}",
        f"a request whose headers trickle in a byte every 0.25 s ({which}; header timeout {TIMEOUT_S:g} s "
        "here, 10 s by default)",
        f"connection closed after {seconds:.1f} s (was: REST 60 s per byte, so never; storage never)",
    )


def test_a_trickling_body_is_cut_off_by_the_body_timeout(bounded: Emulator) -> None:
    where = listeners(bounded)["rest"]
    with socket.create_connection(where) as sock:
        sock.sendall(
            f"POST {JOBS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n{".encode()
        )
        seconds = closed_within(sock, DEADLINE_S)
    assert seconds is not None


def raw_exchange(where: tuple[str, int], data: bytes) -> bytes:
    """Send ``data`` and read until the server closes the connection (or DEADLINE_S)."""
    out = b""
    with socket.create_connection(where, timeout=DEADLINE_S) as sock:
        sock.sendall(data)
        try:
            while chunk := sock.recv(65536):
                out += chunk
        except OSError:
            pass
    return out


def test_a_chunked_body_is_refused_never_smuggled(bounded: Emulator) -> None:
    where = listeners(bounded)["rest"]
    body = job_bytes("smuggled")
    smuggled = (
        f"POST {JOBS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    before = job_count(bounded)
    for origin in ("", "Origin: http://evil.example\r\n"):
        chunk = f"{len(smuggled):x}\r\n".encode() + smuggled + b"\r\n0\r\n\r\n"
        request = (
            f"POST {JOBS} HTTP/1.1\r\nHost: 127.0.0.1\r\n{origin}Content-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        ).encode()
        # the "chunk" is also what a server ignoring Transfer-Encoding reads as the next request
        answer = raw_exchange(where, request + smuggled + b"\r\n" + chunk)
        assert answer.count(b"HTTP/1.1 ") == 1, answer
        assert answer.startswith(b"HTTP/1.1 411 "), answer
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["status"] == "INVALID_ARGUMENT"
    assert job_count(bounded) == before
    record(
        "chunked_smuggling",
        "POST with Transfer-Encoding: chunked (and a foreign Origin) whose body is a second Create",
        "411 INVALID_ARGUMENT, connection closed, no job created (was: the body ran as a Create)",
    )


def test_storage_refuses_chunked_bodies_and_closes(bounded: Emulator) -> None:
    where = listeners(bounded)["storage"]
    follow = b"GET /storage/v1/b/nobucket HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    request = b"GET /storage/v1/b/nobucket HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    answer = raw_exchange(where, request + f"{len(follow):x}\r\n".encode() + follow + b"\r\n0\r\n\r\n")
    assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 411 "), answer


def test_grpc_admits_a_bounded_number_of_calls(tmp_path_factory: pytest.TempPathFactory) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from google.api_core import exceptions

    root = tmp_path_factory.mktemp("grpcceiling")
    with testing.running_emulator(
        root, faults=Faults(latency_s=3.0), grpc_workers=2, grpc_max_concurrent_rpcs=2
    ) as em:
        client = testing.grpc_client(em)
        name = f"{testing.PARENT}/customJobs/1"

        def get() -> str:
            try:
                client.get_custom_job(name=name, retry=None)
            except exceptions.GoogleAPICallError as exc:
                return type(exc).__name__
            return "ok"

        with ThreadPoolExecutor(max_workers=6) as pool:
            outcomes = list(pool.map(lambda _: get(), range(6)))
    # two calls are admitted (and answered NOT_FOUND after the latency), the rest refused at once
    assert outcomes.count("NotFound") == 2 and outcomes.count("ResourceExhausted") == 4, outcomes


# -- the gRPC port -----------------------------------------------------------------------------------

#: the client preface of HTTP/2 (RFC 9113, section 3.4), and an empty SETTINGS frame after it
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
GRPC_OPENINGS = {"nothing": b"", "preface": PREFACE, "preface_and_settings": PREFACE + SETTINGS}


def grpc_address(em: Emulator) -> tuple[str, int]:
    host, _, port = em.grpc_target.rpartition(":")
    return host.strip("[]"), int(port)


def still_open(sock: socket.socket) -> bool:
    """True when the server has not closed ``sock`` (what it sent is read and dropped)."""
    sock.setblocking(False)
    try:
        while sock.recv(65536):
            pass
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False  # end of file


def test_idle_grpc_sockets_leave_calls_answered(tmp_path_factory: pytest.TempPathFactory) -> None:
    from google.api_core import exceptions

    # a long idle timeout here, so that every idle socket is still open when the call is made
    root = tmp_path_factory.mktemp("grpcidle")
    with testing.running_emulator(root, faults=Faults(queued_s=3600), idle_timeout_s=600) as em:
        where = grpc_address(em)
        client = testing.grpc_client(em)
        with ExitStack() as stack:
            idle = [
                stack.enter_context(socket.create_connection(where, timeout=DEADLINE_S)) for _ in range(1100)
            ]
            half_open = [
                stack.enter_context(socket.create_connection(where, timeout=DEADLINE_S)) for _ in range(100)
            ]
            for sock in half_open:
                sock.sendall(PREFACE)
            started = time.monotonic()
            with pytest.raises(exceptions.NotFound):
                client.get_custom_job(name=f"{testing.PARENT}/customJobs/1", timeout=DEADLINE_S, retry=None)
            seconds = time.monotonic() - started
            # still open (whatever the server sent them, its SETTINGS): the call was answered beside them
            assert still_open(idle[0]) and still_open(half_open[0])
    record(
        "idle_sockets_grpc",
        "1,100 idle sockets and 100 HTTP/2 connections that sent only the preface, to the gRPC port, "
        "then GetCustomJob with the stock client",
        f"answered (NOT_FOUND) in {seconds * 1000:.0f} ms; each idle connection closed after the idle "
        "timeout (grpc.max_connection_idle_ms)",
    )


@pytest.mark.parametrize("opening", sorted(GRPC_OPENINGS))
def test_an_idle_grpc_connection_is_closed_after_the_idle_timeout(bounded: Emulator, opening: str) -> None:
    with socket.create_connection(grpc_address(bounded)) as sock:
        sock.sendall(GRPC_OPENINGS[opening])
        seconds = closed_within(sock, DEADLINE_S)
    assert seconds is not None and seconds >= TIMEOUT_S * 0.5, seconds
