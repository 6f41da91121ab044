"""The caller is identified when its connection is accepted, before a byte is read, on every listener.

The hole (issue 37, finding 1): the owner of the caller's socket was looked up after the request's
headers were read. A caller of another account that padded its request with ~6 MB of headers and
closed its socket at once had, by then, left an orphaned socket behind, which the kernel reports as
uid 0: an emulator running as root served it. Now each connection's caller is identified at accept
(its end then still open and owned by its process) and keeps that identity; a socket that is gone,
orphaned or in TIME_WAIT identifies no one, and such a caller is refused, never taken for root.

Also here: ``--host ::1`` (finding 11), IPv6 loopback on the REST and gRPC listeners, the caller
check working over tcp6.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from probes import JOBS, job_bytes, job_count, record

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Faults
from vertex_emulator.server import callers

pytestmark = pytest.mark.skipif(not callers.CAN_CHECK_PEERS, reason="needs /proc/net/tcp (Linux)")

#: a request padded to ~6 MB with headers (http.server reads at most 100 lines of 64 KiB), sent and
#: closed at once: the caller's socket is orphaned long before the server has read the headers
_PADDED_CALLER = r"""
import json, socket, sys
args = json.loads(sys.argv[1])
body = args["body"].encode()
head = ["POST %s HTTP/1.1" % args["path"], "Host: 127.0.0.1", "Content-Type: application/json",
        "Content-Length: %d" % len(body)]
head += ["X-Pad-%02d: %s" % (i, "p" * 64000) for i in range(90)]
data = ("\r\n".join(head) + "\r\n\r\n").encode() + body
with socket.create_connection(("127.0.0.1", args["port"])) as sock:
    sock.sendall(data)
print(len(data))
"""


def _wait(what: str, done: object, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:.0f} s: {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("netlink", [True, False], ids=["sock_diag", "proc"])
def test_a_caller_gone_before_the_lookup_identifies_no_one(
    netlink: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs in any account: the kernel reports an orphaned socket (its process closed it) as uid 0,
    and one in TIME_WAIT as uid 0 too; neither may identify a caller, least of all as root."""
    if not netlink:
        monkeypatch.setattr(callers, "_diag_works", False)
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.create_server((host, 0), family=family) as server:
            port = server.getsockname()[1]
            client = socket.create_connection((host, port))
            peer_host, peer_port = client.getsockname()[:2]
            accepted, _ = server.accept()
            with accepted:
                assert callers.peer_uid(peer_host, peer_port, port) == os.geteuid()  # open: its owner
                client.sendall(b"x" * 1000)
                client.close()  # orphaned: FIN_WAIT2, no process holds it
                assert callers.peer_uid(peer_host, peer_port, port) is None
                assert callers.identify(accepted) is None
            # the server's end closed too: the caller's end is in TIME_WAIT (or gone)
            assert callers.peer_uid(peer_host, peer_port, port) is None
            # a caller that only shut its sending side still holds its socket: still its owner's
            with socket.create_connection((host, port)) as client:
                accepted, _ = server.accept()
                with accepted:
                    client.shutdown(socket.SHUT_WR)
                    assert accepted.recv(1) == b""  # its end of file is here: it is in FIN_WAIT2
                    assert callers.identify(accepted) == os.geteuid()


def test_the_grpc_port_is_accepted_by_the_emulator_and_grpc_is_private(tmp_path: Path) -> None:
    """The gRPC server listens only on a Unix socket in a directory of mode 0700; the TCP port is
    the accepting proxy's, which records who called before gRPC sees a byte."""
    import stat

    from vertex_emulator.server.acceptproxy import AcceptProxy

    with testing.running_emulator(tmp_path) as em:
        proxy = em._grpc._proxy  # type: ignore[union-attr]
        assert isinstance(proxy, AcceptProxy) and em.grpc_target.endswith(f":{proxy.port}")
        folder = Path(proxy.backend).parent
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and Path(proxy.backend).is_socket()
        testing.grpc_client(em).list_custom_jobs(parent=testing.PARENT)
        assert sorted(proxy.uid_of(peer) for peer in list(proxy._links)) == [os.geteuid()]
        assert proxy.uid_of("ipv4:127.0.0.1:1") is None  # no connection of its own: no one
    assert not folder.exists()


def test_a_lookup_never_answers_with_another_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked for a connection that does not exist, the kernel's exact lookup falls back to a
    listening socket on the caller's address and port: that socket is not the caller."""
    with socket.create_server(("127.0.0.1", 0)) as listener, socket.create_server(("127.0.0.1", 0)) as other:
        # "a caller at listener's address" calling `other`: no such connection, only the listener
        assert callers.peer_uid("127.0.0.1", listener.getsockname()[1], other.getsockname()[1]) is None


@pytest.fixture
def as_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """An emulator that runs as root (really, or made to believe it), its jobs left QUEUED."""
    with testing.running_emulator(tmp_path, faults=Faults(queued_s=3600)) as em:
        monkeypatch.setattr(os, "geteuid", lambda: 0)
        yield em


def _caller() -> tuple[list[str], int | None]:
    """A Python that runs as another uid than 0 (the emulator's): this process's own when it is not
    root; ``nobody`` through the system's Python when it is."""
    if os.getuid() != 0:
        return [sys.executable], None
    import pwd

    try:
        nobody = pwd.getpwnam("nobody").pw_uid
    except KeyError:
        pytest.skip("the tests run as root and there is no 'nobody' account to call from")
    system_python = Path("/usr/bin/python3")
    if not system_python.exists():
        pytest.skip("the tests run as root and no system Python can run as 'nobody'")
    return [str(system_python)], nobody


@pytest.mark.parametrize("surface", ["jobs", "storage"])
def test_a_padded_request_closed_at_once_is_refused(as_root: Emulator, surface: str) -> None:
    em = as_root
    python, uid = _caller()
    package = Path(em.config.gcs_root) / "bucket" / "setup.py"
    package.parent.mkdir()
    package.write_text("print('the owner wrote this')\n")
    if surface == "jobs":
        server, endpoint, path = em._rest._server, em.rest_endpoint, JOBS  # type: ignore[union-attr]
    else:
        server, endpoint = em._storage._httpd, str(em.config.storage_endpoint)  # type: ignore[union-attr]
        path = "/upload/storage/v1/b/bucket/o?uploadType=media&name=setup.py"
    before, creates = job_count(em), em.call_counts().get("CreateCustomJob", 0)
    body = job_bytes("padded").decode() if surface == "jobs" else "import os; os.system('planted')"
    args = {"port": int(endpoint.rsplit(":", 1)[1]), "path": path, "body": body}
    sent = _run_caller(python, uid, _PADDED_CALLER, args)
    _wait("the server is done with the padded request", lambda: server.open_connections() == 0)
    assert job_count(em) == before
    assert em.call_counts().get("CreateCustomJob", 0) == creates  # refused before it reached the service
    assert package.read_text() == "print('the owner wrote this')\n"
    what = "POST customJobs" if surface == "jobs" else "an upload over a package's setup.py (Cloud Storage)"
    record(
        f"caller_check_race_{surface}",
        f"another account ({'nobody' if uid else 'this uid, the emulator made to run as root'}): "
        f"{what} padded to {int(sent.stdout) / 2**20:.1f} MB of headers, socket closed at once",
        "refused, nothing created or written: the caller is identified when its connection is accepted, "
        "a closed socket identifies no one (was: read as uid 0 and served by an emulator running as root)",
    )


def _run_caller(python: list[str], uid: int | None, script: str, args: dict[str, Any]) -> Any:
    """Run a caller ``script`` (its ``args`` as JSON) as ``uid``, from ``/``; it must exit 0."""
    sent = subprocess.run(
        [*python, "-I", "-c", script, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
        user=uid,
        cwd="/",
    )
    assert sent.returncode == 0, sent.stderr[-2000:]
    return sent


#: a gRPC CreateCustomJob by hand (HTTP/2: preface, SETTINGS, HEADERS, DATA), the socket closed at once
_GRPC_CALLER = r"""
import json, socket, sys
args = json.loads(sys.argv[1])
def frame(kind, flags, stream, payload):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload
def string(text):
    data = text.encode()
    assert len(data) < 127
    return bytes([len(data)]) + data
fields = [(":method", "POST"), (":scheme", "http"), (":path", args["path"]), (":authority", "localhost"),
          ("content-type", "application/grpc"), ("te", "trailers")]
block = b"".join(b"\x00" + string(name) + string(value) for name, value in fields)
message = bytes.fromhex(args["message"])
data = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + frame(1, 4, 1, block)
data += frame(0, 1, 1, b"\x00" + len(message).to_bytes(4, "big") + message)
for _ in range(args["tries"]):
    with socket.create_connection(("127.0.0.1", args["port"])) as sock:
        sock.sendall(data)
print(len(data))
"""


def test_a_grpc_call_closed_at_once_is_refused(as_root: Emulator) -> None:
    from google.cloud.aiplatform_v1 import CreateCustomJobRequest, CustomJob

    em = as_root
    python, uid = _caller()
    request = CreateCustomJobRequest(
        parent=testing.PARENT, custom_job=CustomJob.from_json(json.dumps(testing.container_job("raced")))
    )
    before = job_count(em)
    args = {
        "port": int(em.grpc_target.rsplit(":", 1)[1]),
        "path": "/google.cloud.aiplatform.v1.JobService/CreateCustomJob",
        "message": CreateCustomJobRequest.serialize(request).hex(),
        "tries": 20,
    }
    _run_caller(python, uid, _GRPC_CALLER, args)
    proxy = em._grpc._proxy  # type: ignore[union-attr]
    _wait("the gRPC port is done with the raced connections", lambda: not proxy._links)
    assert job_count(em) == before
    record(
        "caller_check_race_grpc",
        f"another account ({'nobody' if uid else 'this uid, the emulator made to run as root'}): "
        "CreateCustomJob over gRPC (HTTP/2 by hand), the socket closed at once, 20 times",
        "no job created: the caller is identified when the gRPC port accepts the connection (before, "
        "gRPC dropped such calls too: the race was seen over HTTP)",
    )


def _ipv6_loopback() -> bool:
    try:
        with socket.create_server(("::1", 0), family=socket.AF_INET6):
            return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
def test_the_emulator_serves_ipv6_loopback(tmp_path: Path) -> None:
    import grpc
    from google.api_core import exceptions
    from google.cloud.aiplatform_v1 import CustomJob, JobServiceClient
    from google.cloud.aiplatform_v1.services.job_service.transports.grpc import JobServiceGrpcTransport

    argv = [
        sys.executable, "-m", "vertex_emulator", "--host", "::1", "--grpc-port", "0", "--rest-port", "0",
        "--storage-port", "0", "--state-dir", str(tmp_path / "state"), "--provisioning-seconds", "3600",
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True).start()
    try:
        deadline, ready, seen = time.monotonic() + 60, "", []
        while not ready.startswith("emulator ready"):
            try:
                ready = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"the emulator did not start on ::1: {''.join(seen)}") from None
            seen.append(ready)
        fields = dict(part.split("=", 1) for part in ready.split()[2:])
        assert fields["grpc"].startswith("[::1]:") and fields["rest"].startswith("http://[::1]:"), fields
        assert fields["storage"].startswith("http://127.0.0.1:"), fields  # Cloud Storage: IPv4 loopback
        body = CustomJob.from_json(json.dumps(testing.container_job("over-ipv6")))
        grpc_client = JobServiceClient(
            transport=JobServiceGrpcTransport(channel=grpc.insecure_channel(fields["grpc"]))
        )
        rest_client = JobServiceClient(
            transport="rest", client_options={"api_endpoint": fields["rest"]}, credentials=_anonymous()
        )
        for client in (grpc_client, rest_client):
            job = client.create_custom_job(parent=testing.PARENT, custom_job=body)
            assert client.get_custom_job(name=job.name).display_name == "over-ipv6"
        # the caller check holds over tcp6: a connection whose owner cannot be found is refused
        # (checked in process by the tests above); here, its own user is served over both
        with pytest.raises(exceptions.NotFound):
            grpc_client.get_custom_job(name=f"{testing.PARENT}/customJobs/999999", retry=None)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    record(
        "ipv6_loopback",
        "emulator --host ::1, then the stock JobServiceClient over gRPC and over REST: Create, Get",
        "starts and serves both (was: 'Address family for hostname not supported', no start)",
    )


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
def test_the_caller_check_holds_over_ipv6(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from google.api_core import exceptions

    with testing.running_emulator(tmp_path, host="::1", faults=Faults(queued_s=3600)) as em:
        grpc_client, rest_client = testing.grpc_client(em), testing.rest_client(em)
        for client in (grpc_client, rest_client):
            client.list_custom_jobs(parent=testing.PARENT)  # its own user, over tcp6: served
        monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)  # now another account's
        with pytest.raises(exceptions.PermissionDenied, match="only the local user that runs it"):
            grpc_client.list_custom_jobs(parent=testing.PARENT)
        with pytest.raises(exceptions.Forbidden):
            rest_client.list_custom_jobs(parent=testing.PARENT)


def _anonymous() -> object:
    from google.auth.credentials import AnonymousCredentials

    return AnonymousCredentials()  # type: ignore[no-untyped-call]
