"""Issue 37, finding 8: credentials to any host.

With ``"emulator": false`` an ``api_endpoint`` or ``logging_endpoint`` took any host, so the
connection's Google credentials went wherever whoever edits the connection pointed them; an
``emulator_token_file`` was read whatever it was and its content sent as a bearer token, in clear, to
any host. Now the credentials go to ``googleapis.com`` hosts only unless the connection lists another
host in ``trusted_endpoint_hosts``; a token file must be a regular file, the owner's only, of at most
4096 bytes; a token sent in clear off this machine is logged as a warning.

The probe listens on a real loopback socket and counts the connections the stock client makes to it.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from airflow_vertex_dist.hooks.connection import RetryPolicy, VertexConnection
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from tests.stack.figures import Figures


@pytest.fixture(scope="module")
def key_info() -> dict[str, Any]:
    """A service account key, as a connection's ``keyfile_dict`` holds it."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {
        "type": "service_account",
        "project_id": "key-project",
        "private_key_id": "abc",
        "private_key": pem,
        "client_email": "runner@key-project.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }


@pytest.fixture
def listener() -> Iterator[tuple[str, list[bytes]]]:
    """A loopback socket standing for a host the connection editor chose: ``host:port`` and what each
    connection made to it sent first."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    received.append(conn.recv(65536))
                except OSError:
                    received.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}", received
    stop.set()
    thread.join(timeout=5)
    server.close()


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_credentials_do_not_go_to_a_host_that_is_not_googles(
    listener: tuple[str, list[bytes]],
    key_info: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    transport: str,
) -> None:
    endpoint, received = listener
    extra = {
        "project": "p",
        "location": "us-central1",
        "keyfile_dict": key_info,
        "transport": transport,
        "api_endpoint": endpoint if transport == "grpc" else f"https://{endpoint}",
        "emulator": False,
    }
    monkeypatch.setenv("AIRFLOW_CONN_ELSEWHERE", json.dumps({"conn_type": "vertex_dist", "extra": extra}))
    hook = VertexJobsHook(
        "elsewhere", retry_policy=RetryPolicy(initial_s=0.05, maximum_s=0.2, deadline_s=3.0)
    )
    with pytest.raises(
        ValueError, match=r"api_endpoint: .*only sent to \*\.googleapis\.com hosts.*trusted_endpoint_hosts"
    ):
        hook.get_job("projects/p/locations/us-central1/customJobs/1")
    assert received == []  # today: the client connected and sent its TLS hello, credentials next


def test_a_host_the_connection_names_is_trusted_and_googles_are_by_default() -> None:
    psc = VertexConnection.from_extra({"api_endpoint": "us-central1-aiplatform-vpc1.p.googleapis.com"})
    assert psc.grpc_target == "us-central1-aiplatform-vpc1.p.googleapis.com"
    VertexConnection.from_extra({"logging_endpoint": "https://logging.googleapis.com"})
    for bad in (
        "googleapis.com.evil.example:443",
        "evilgoogleapis.com",
        "https://x.googleapis.com@evil.example",
    ):
        with pytest.raises(ValueError, match="trusted_endpoint_hosts"):
            VertexConnection.from_extra({"api_endpoint": bad, "transport": "rest"})
    named = VertexConnection.from_extra(
        {"api_endpoint": "10.8.0.5:443", "trusted_endpoint_hosts": "10.8.0.5"}
    )
    assert named.grpc_target == "10.8.0.5:443"
    with pytest.raises(ValueError, match=r"c1\.extra: logging_endpoint: 'logs\.corp\.example'"):
        VertexConnection.from_extra(
            {"logging_endpoint": "logs.corp.example", "trusted_endpoint_hosts": "10.8.0.5"}, conn_id="c1"
        )


def _token_conn(path: Path) -> VertexConnection:
    return VertexConnection.from_extra(
        {"api_endpoint": "127.0.0.1:8781", "emulator": True, "emulator_token_file": str(path)}
    )


def test_a_token_file_must_be_the_owners_only_small_and_regular(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("a-token-of-the-emulator\n")
    token.chmod(0o600)
    assert _token_conn(token).emulator_auth_token() == "a-token-of-the-emulator"
    token.chmod(0o644)  # today: read and sent
    with pytest.raises(
        ValueError, match=r"emulator_token_file: .* may be read or written by its group or others"
    ):
        _token_conn(token).emulator_auth_token()
    big = tmp_path / "big"
    big.write_bytes(b"x" * 5000)
    big.chmod(0o600)
    with pytest.raises(ValueError, match=r"emulator_token_file: .* is 5000 bytes, over the 4096"):
        _token_conn(big).emulator_auth_token()
    with pytest.raises(ValueError, match=r"emulator_token_file: .* is not a regular file"):
        _token_conn(tmp_path).emulator_auth_token()
    if hasattr(os, "mkfifo"):  # a FIFO is refused at once, not waited on
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo, 0o600)
        with pytest.raises(ValueError, match=r"emulator_token_file: .* is not a regular file"):
            _token_conn(fifo).emulator_auth_token()


def test_a_token_sent_in_clear_off_this_machine_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    extra = {"emulator": True, "emulator_token": "a-token-of-the-emulator"}
    with caplog.at_level(logging.WARNING, logger="airflow_vertex_dist.hooks.endpoints"):
        VertexConnection.from_extra({**extra, "api_endpoint": "127.0.0.1:8781"}).emulator_auth_token()
        assert "travels in clear" not in caplog.text
        VertexConnection.from_extra({**extra, "api_endpoint": "10.9.8.7:8781"}).emulator_auth_token()
    assert "api_endpoint: '10.9.8.7:8781' is not on this machine" in caplog.text
    assert "travels in clear" in caplog.text and "a-token-of-the-emulator" not in caplog.text
    Figures.record(
        "security_probes",
        "endpoint_credentials",
        {
            "input": 'a connection with "emulator": false and api_endpoint a loopback listener (gRPC, REST); emulator_token_file of mode 0644, 5,000 bytes, a directory, a FIFO; a token to 10.9.8.7 in clear',  # noqa: E501 - the table's text
            "answer": "ValueError naming api_endpoint and trusted_endpoint_hosts, no connection made; ValueError naming emulator_token_file each time; a warning (was: connected with the credentials, the files read, no warning)",  # noqa: E501 - the table's text
        },
    )
