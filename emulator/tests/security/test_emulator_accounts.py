"""On a shared machine loopback is no boundary: every surface of the emulator (JobService over gRPC and
REST, Cloud Logging over gRPC and HTTP, Cloud Storage, the pages) serves only the local account that
runs it, or a caller with its access token; its own replicas still reach Cloud Storage with no step.

Two ways to be another account: the emulator made to believe it runs as another uid (works anywhere),
and, when the tests run as root, probes that really run as ``nobody`` (stock clients after dropping
privileges; the system's own Python through ``runuser``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from logging_support import logging_client
from probes import TOKEN, record

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Faults
from vertex_emulator.server import callers

pytestmark = pytest.mark.skipif(not callers.CAN_CHECK_PEERS, reason="needs /proc/net/tcp (Linux)")


def status(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None) -> int:
    req = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.fixture
def em(tmp_path: Path) -> Iterator[Emulator]:
    with testing.running_emulator(tmp_path, faults=Faults(queued_s=3600)) as em:
        (Path(em.config.gcs_root) / "bucket").mkdir()
        (Path(em.config.gcs_root) / "bucket" / "setup.py").write_text("print('the owner wrote this')\n")
        yield em


@pytest.mark.parametrize("netlink", [True, False], ids=["sock_diag", "proc"])
def test_peer_uid_names_the_owner_of_a_loopback_connection(
    netlink: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not netlink:
        monkeypatch.setattr(callers, "_diag_works", False)
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        server = socket.create_server((host, 0), family=family)
        with server, socket.create_connection(server.getsockname()[:2]) as c:
            peer_host, peer_port = c.getsockname()[:2]
            port = server.getsockname()[1]
            assert callers.peer_uid(peer_host, peer_port, port) == os.geteuid()
            assert callers.peer_uid(peer_host, peer_port, port, host) == os.geteuid()
            assert callers.peer_uid(peer_host, peer_port, port ^ 1) is None  # no such connection
            assert callers.peer_uid(peer_host, peer_port ^ 1, port) is None


def test_every_surface_refuses_another_account(em: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    from google.api_core import exceptions
    from google.cloud import storage

    grpc_client, rest_client = testing.grpc_client(em), testing.rest_client(em)
    grpc_client.list_custom_jobs(parent=testing.PARENT)  # the emulator's own user: served
    # the emulator now runs as another uid than the callers': the callers are another account
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    with pytest.raises(exceptions.PermissionDenied, match="only the local user that runs it") as over_grpc:
        grpc_client.list_custom_jobs(parent=testing.PARENT)
    with pytest.raises(exceptions.Forbidden) as over_rest:  # 403 over HTTP (PermissionDenied is one too)
        rest_client.list_custom_jobs(parent=testing.PARENT)
    record(
        "another_account_jobs",
        "ListCustomJobs over gRPC and over REST from another local account's loopback connection, no token",
        f"{_refusal(over_grpc.value)}; {_refusal(over_rest.value)} "
        "(was: served: another account ran commands as the emulator's user)",
    )
    logging_refusals = []
    for over_grpc_logging in (True, False):
        with pytest.raises(exceptions.Forbidden) as refused:
            list(logging_client(em, grpc=over_grpc_logging).list_entries(max_results=1))
        logging_refusals.append(_refusal(refused.value))
    record(
        "another_account_logging",
        "entries.list over gRPC and over HTTP from another local account, no token",
        "; ".join(logging_refusals) + " (was: served: another account read every job's logs)",
    )
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", str(em.config.storage_endpoint))
    blob = storage.Client().bucket("bucket").blob("setup.py")
    with pytest.raises(exceptions.Forbidden) as download:
        blob.download_as_bytes()
    with pytest.raises(exceptions.Forbidden) as upload:
        blob.upload_from_string(b"import os; os.system('planted')")
    assert "the owner wrote this" in (Path(em.config.gcs_root) / "bucket" / "setup.py").read_text()
    record(
        "another_account_storage",
        "the stock client from another local account: download, then overwrite, of a package's setup.py",
        f"{download.value.code}; {upload.value.code}, the object unchanged "
        "(was: both served: another account could replace the code a job installs)",
    )
    pages = [status(em.rest_endpoint + "/"), status(f"{em.rest_endpoint}/ui/")]
    assert pages == [403, 403]
    record(
        "another_account_pages",
        "GET / and /ui/ from another local account, no token",
        f"{pages[0]}; {pages[1]} (was: served)",
    )


def _refusal(exc: Exception) -> str:
    """How a refused call of a stock client ended: the gRPC status name, else the HTTP status."""
    code = getattr(exc, "grpc_status_code", None)
    return str(code.name) if code is not None else str(getattr(exc, "code", type(exc).__name__))


def test_storage_takes_the_token_from_another_account(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with testing.running_emulator(tmp_path, auth_token=TOKEN) as em:
        (Path(em.config.gcs_root) / "bucket").mkdir()
        url = f"{em.config.storage_endpoint}/storage/v1/b/bucket/o"
        own = status(url)
        assert own == 200  # the emulator's own user (its replicas): no token needed
        monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
        other = [
            status(url),
            status(url, headers={"Authorization": "Bearer wrong-token-0123456789"}),
            status(url, headers={"Authorization": f"Bearer {TOKEN}"}),
        ]
        assert other == [403, 403, 200]
        record(
            "storage_token",
            "an emulator with --auth-token: list a bucket from another local account with no token, "
            "a wrong token, the token; from the emulator's own user with none",
            f"{other[0]}, {other[1]}, {other[2]}; {own} "
            "(was: storage ignored --auth-token: served with no token)",
        )


def test_replicas_use_storage_with_the_stock_client_and_no_step(em: Emulator) -> None:
    code = (
        "from google.cloud import storage\n"
        "b = storage.Client().bucket('bucket')\n"
        "print(b.blob('setup.py').download_as_text().strip())\n"
        "b.blob('out/model.txt').upload_from_string('weights')\n"
    )
    job = em.store.insert("customJobs", testing.PARENT, testing.container_job("gcs", code))
    em.config.faults.queued_s = 0
    em.runner.submit(job["name"])
    done = testing.wait_for_state(em, job["name"], {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}, timeout=90)
    assert done["state"] == "JOB_STATE_SUCCEEDED", done.get("error")
    assert (Path(em.config.gcs_root) / "bucket" / "out" / "model.txt").read_text() == "weights"


# -- for real: another account on this machine ----------------------------------------------------

_AS_NOBODY = """
import json, os, sys, urllib.error, urllib.request
from google.api_core import exceptions
from google.cloud import storage
from google.cloud.aiplatform_v1 import JobServiceClient
from google.cloud.aiplatform_v1.services.job_service.transports.grpc import JobServiceGrpcTransport
import grpc
args = json.loads(sys.argv[1])
os.environ["STORAGE_EMULATOR_HOST"] = args["storage"]
clients = {
    "grpc": JobServiceClient(transport=JobServiceGrpcTransport(channel=grpc.insecure_channel(args["grpc"]))),
}
bucket = storage.Client().bucket("bucket")
os.setgroups([])
os.setgid(args["uid"])
os.setuid(args["uid"])
out = {}
try:
    clients["grpc"].list_custom_jobs(parent=args["parent"])
    out["grpc"] = "served"
except exceptions.GoogleAPICallError as exc:
    out["grpc"] = type(exc).__name__
for name, call in (("read", lambda: bucket.blob("setup.py").download_as_bytes()),
                   ("write", lambda: bucket.blob("setup.py").upload_from_string(b"planted"))):
    try:
        call()
        out[name] = "served"
    except exceptions.GoogleAPICallError as exc:
        out[name] = type(exc).__name__
print(json.dumps(out))
"""

_STDLIB_PROBE = """
import json, sys, urllib.error, urllib.request
out = {}
for name, url in json.loads(sys.argv[1]).items():
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            out[name] = resp.status
    except urllib.error.HTTPError as exc:
        out[name] = exc.code
print(json.dumps(out))
"""


def _nobody() -> int:
    import pwd

    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        pytest.skip("no 'nobody' account")


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming another account needs root")
def test_another_account_for_real_is_refused(em: Emulator) -> None:
    uid = _nobody()
    args = {"uid": uid, "grpc": em.grpc_target, "storage": em.config.storage_endpoint}
    args["parent"] = testing.PARENT
    probe = subprocess.run(
        [sys.executable, "-c", _AS_NOBODY, json.dumps(args)], capture_output=True, text=True, timeout=60
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    clients = json.loads(probe.stdout)
    assert clients == {"grpc": "PermissionDenied", "read": "Forbidden", "write": "Forbidden"}
    assert "the owner wrote this" in (Path(em.config.gcs_root) / "bucket" / "setup.py").read_text()
    given = "as nobody (setuid): the stock clients' ListCustomJobs (gRPC), download and overwrite of setup.py"
    answer = ", ".join(clients.values())
    system_python, runuser = Path("/usr/bin/python3"), shutil.which("runuser")
    if runuser is None or not system_python.exists():
        record("another_account_for_real", given, f"{answer} (was: served)")
        return
    urls = {
        "jobs": f"{em.rest_endpoint}/v1/{testing.PARENT}/customJobs",
        "page": f"{em.rest_endpoint}/",
        "storage": f"{em.config.storage_endpoint}/storage/v1/b/bucket/o",
    }
    as_nobody = subprocess.run(
        [runuser, "-u", "nobody", "--", str(system_python), "-I", "-c", _STDLIB_PROBE, json.dumps(urls)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert as_nobody.returncode == 0, as_nobody.stderr[-2000:]
    assert json.loads(as_nobody.stdout) == {"jobs": 403, "page": 403, "storage": 403}
    # the same probe as the owner is served
    served: Any = json.loads(
        subprocess.run(
            [str(system_python), "-I", "-c", _STDLIB_PROBE, json.dumps(urls)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    )
    assert served == {"jobs": 200, "page": 200, "storage": 200}
    refused = json.loads(as_nobody.stdout)
    record(
        "another_account_for_real",
        f"{given}; the system Python run by runuser -u nobody: GET customJobs, the page, a bucket listing",
        f"{answer}; {', '.join(str(v) for v in refused.values())} (the owner's same GETs: "
        f"{', '.join(str(v) for v in served.values())}; was: served)",
    )
