"""An emulator started with an access token (``--auth-token``, needed to reach it from another machine)
is usable by the provider: a connection with ``emulator_token`` or ``emulator_token_file`` sends it on
every call -- JobService over gRPC (sync and asyncio) and REST, PersistentResourceService over gRPC and
REST, Cloud Logging over gRPC and HTTP -- and one without it is refused."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import google.auth.exceptions
import pytest
from google.api_core import exceptions

from airflow_vertex_dist.hooks.connection import VertexConnection
from airflow_vertex_dist.hooks.logs import VertexLogsHook
from airflow_vertex_dist.hooks.persistent_resources import PersistentResourcesHook
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook, VertexJobsHook
from vertex_emulator import testing
from vertex_emulator.app import Emulator

#: the access token the guarded emulator requires (the emulator's own probes use the same one)
TOKEN = "s3cret-token-for-tests-0123456789"

EMULATOR = {"emulator": True, "api_endpoint": "127.0.0.1:1"}
# without the token: 401 (over REST, google-auth's anonymous credentials then refuse to refresh)
REFUSED = (exceptions.Unauthorized, google.auth.exceptions.InvalidOperation)


@pytest.fixture(scope="module")
def guarded_em(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with testing.running_emulator(tmp_path_factory.mktemp("token-clients"), auth_token=TOKEN) as em:
        job = em.store.insert("customJobs", testing.PARENT, testing.container_job("token"))
        em.runner.submit(job["name"])
        testing.wait_for_state(em, job["name"], {"JOB_STATE_SUCCEEDED"}, timeout=60)
        yield em


def _connect(monkeypatch: pytest.MonkeyPatch, em: Emulator, transport: str, **token: str) -> None:
    extra = {
        "project": "test-project",
        "location": "us-central1",
        "transport": transport,
        "api_endpoint": em.grpc_target if transport == "grpc" else em.rest_endpoint,
        "emulator": True,
        **token,
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT", json.dumps({"conn_type": "vertex_dist", "extra": extra})
    )


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_connection_with_the_token_reaches_every_api(
    guarded_em: Emulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, transport: str
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    for token in ({"emulator_token": TOKEN}, {"emulator_token_file": str(token_file)}):
        _connect(monkeypatch, guarded_em, transport, **token)
        with VertexJobsHook() as hook:
            jobs = hook.list_jobs("customJobs")
            assert [job["state"] for job in jobs] == ["JOB_STATE_SUCCEEDED"]
        logs = VertexLogsHook()
        try:
            job_id = jobs[0]["name"].rsplit("/", 1)[1]
            logs.read_lines([job_id])  # Cloud Logging (same port): refused without the token
        finally:
            logs.close()
        if transport == "grpc":

            async def listed() -> int:
                async with VertexJobsAsyncHook() as ahook:
                    return len(await ahook.list_jobs("customJobs"))

            assert asyncio.run(listed()) == 1


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_connection_without_the_token_is_refused(
    guarded_em: Emulator, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    _connect(monkeypatch, guarded_em, transport)
    with VertexJobsHook() as hook, pytest.raises(REFUSED):
        hook.list_jobs("customJobs")
    logs = VertexLogsHook()
    try:
        with pytest.raises(REFUSED):
            logs.read_lines(["1"])
    finally:
        logs.close()


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_persistent_resource_hook_sends_the_token_as_the_job_hook_does(
    guarded_em: Emulator, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    """The PersistentResourceService client is made as the JobService's: with the token it reaches the
    guarded emulator, without it it is refused."""
    _connect(monkeypatch, guarded_em, transport, emulator_token=TOKEN)
    hook = PersistentResourcesHook()
    try:
        assert hook.list_resources() == []
        assert hook.get_resource("none") is None
    finally:
        hook.close()
    _connect(monkeypatch, guarded_em, transport)
    hook = PersistentResourcesHook()
    try:
        with pytest.raises(REFUSED):
            hook.list_resources()
    finally:
        hook.close()


def test_the_token_fields_belong_to_the_emulator() -> None:
    with pytest.raises(ValueError, match="emulator_token: only the emulator"):
        VertexConnection.from_extra({"emulator_token": TOKEN})
    with pytest.raises(ValueError, match="give one, not both"):
        VertexConnection.from_extra({**EMULATOR, "emulator_token": TOKEN, "emulator_token_file": "x"})
    conn = VertexConnection.from_extra({**EMULATOR, "emulator_token": TOKEN})
    assert TOKEN not in repr(conn)
    missing = VertexConnection.from_extra({**EMULATOR, "emulator_token_file": "/nonexistent/token"})
    with pytest.raises(ValueError, match="emulator_token_file: cannot read /nonexistent/token"):
        missing.emulator_auth_token()


def test_the_testing_helpers_carry_the_emulators_token(guarded_em: Emulator) -> None:
    """``vertex_emulator.testing``'s stock clients (and the pytest plugin's) send the emulator's token."""
    for client in (testing.grpc_client(guarded_em), testing.rest_client(guarded_em)):
        assert [job.display_name for job in client.list_custom_jobs(parent=testing.PARENT)] == ["token"]

    async def listed() -> int:
        client = testing.async_grpc_client(guarded_em)
        try:
            return len([job async for job in await client.list_custom_jobs(parent=testing.PARENT)])
        finally:
            await client.transport.close()

    assert asyncio.run(listed()) == 1
    with pytest.raises(exceptions.Unauthenticated):
        testing.grpc_client(guarded_em, auth=False).list_custom_jobs(parent=testing.PARENT)
