"""Who may call the emulator: it runs the commands its jobs name, so it is a security boundary.

A web page the developer visits could post a job (a CORS "simple request": text/plain, no
preflight) or reach the emulator under its own host name (DNS rebinding). Writes must be JSON, a
foreign ``Origin`` or ``Host`` is refused, and a non-loopback ``--host`` needs an access token,
checked on every REST and gRPC call. The stock clients keep working: unchanged on loopback; with a
token, REST through OAuth2 credentials and gRPC through ``authorization`` metadata.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from probes import JOBS, JSON, PARENT, TOKEN, Http, answer, job_bytes, job_count, record

from vertex_emulator import cli, testing
from vertex_emulator.app import Emulator
from vertex_emulator.cli.config import config_from_args
from vertex_emulator.core.config import check_exposure


def test_a_simple_cross_site_post_creates_nothing(emulator: Emulator, web: Http) -> None:
    """The CORS "simple request" a web page can send without a preflight: text/plain, foreign Origin."""
    before = job_count(emulator)
    headers = {"Content-Type": "text/plain;charset=UTF-8", "Origin": "http://evil.example"}
    status, data = web.request("POST", JOBS, job_bytes(), headers)
    assert status == 403 and data["error"]["status"] == "PERMISSION_DENIED", data
    assert "Origin" in data["error"]["message"]
    assert job_count(emulator) == before
    record(
        "cross_site_post",
        "POST customJobs, Content-Type: text/plain, Origin: http://evil.example",
        answer(status, data),
    )


def test_a_write_that_is_not_json_is_refused(emulator: Emulator, web: Http) -> None:
    before = job_count(emulator)
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        status, data = web.request("POST", JOBS, job_bytes(), {"Content-Type": ctype})
        assert status == 415 and data["error"]["status"] == "INVALID_ARGUMENT", (ctype, data)
        assert "application/json" in data["error"]["message"]
    status, data = web.request("POST", f"{JOBS}/1:cancel", b"")  # no body, no type: a bodiless fetch()
    assert status == 415, data
    assert job_count(emulator) == before
    record("non_json_post", "POST customJobs, Content-Type: text/plain, no Origin", answer(status, data))


def test_a_foreign_origin_is_refused_even_with_json(emulator: Emulator, web: Http) -> None:
    status, data = web.request("POST", JOBS, job_bytes(), {**JSON, "Origin": "http://evil.example:8780"})
    assert status == 403, data
    for origin in ("null", f"https://127.0.0.1:{web.port}", f"http://127.0.0.1:{web.port + 1}"):
        status, data = web.request("GET", JOBS, headers={"Origin": origin})
        assert status == 403, (origin, data)
    status, data = web.request("GET", JOBS, headers={"Origin": f"http://localhost:{web.port}"})
    assert status == 200, data  # its own pages' origin
    status, data = web.request("POST", JOBS, job_bytes(), {**JSON, "Origin": f"http://127.0.0.1:{web.port}"})
    assert status == 200, data


def test_a_rebound_host_name_is_refused(web: Http) -> None:
    """DNS rebinding: evil.example resolves to 127.0.0.1, the browser sends ``Host: evil.example``."""
    status, data = web.request("GET", JOBS, headers={"Host": f"evil.example:{web.port}"})
    assert status == 403 and "DNS-rebinding" in data["error"]["message"], data
    record("dns_rebinding", "GET customJobs, Host: evil.example:<emulator port>", answer(status, data))
    for host in (f"localhost:{web.port}", f"127.0.0.1:{web.port}", "[::1]", "app.localhost"):
        status, data = web.request("GET", JOBS, headers={"Host": host})
        assert status == 200, (host, data)


def test_the_served_address_is_a_name_too(tmp_path: Path) -> None:
    with testing.running_emulator(tmp_path, host="127.0.0.2") as em:
        web = Http(em)
        for host in ("127.0.0.2", f"127.0.0.2:{web.port}", f"localhost:{web.port}"):
            status, data = web.request("GET", JOBS, headers={"Host": host})
            assert status == 200, (host, data)
        status, data = web.request("GET", JOBS, headers={"Host": "127.0.0.3"})
        assert status == 403, data


def test_bound_to_all_addresses_any_host_name_is_accepted() -> None:
    from types import SimpleNamespace

    from vertex_emulator.rest.handler import RestHTTPServer

    for bind in ("0.0.0.0", "::"):
        assert RestHTTPServer.host_allowed(SimpleNamespace(bind_host=bind), "build-box.example")  # type: ignore[arg-type]
    assert not RestHTTPServer.host_allowed(SimpleNamespace(bind_host="127.0.0.1"), "build-box.example")  # type: ignore[arg-type]


def test_other_writes_must_be_json_too(web: Http) -> None:
    status, data = web.request("PUT", "/emulator/faults", b'{"latency_s": 0}', {"Content-Type": "text/plain"})
    assert status == 415, data
    status, data = web.request("DELETE", f"{JOBS}/1", b"{}", {"Content-Type": "text/plain"})
    assert status == 415, data
    status, data = web.request("DELETE", f"{JOBS}/1")  # no body: DELETE needs no type
    assert status == 404, data


def test_the_stock_clients_work_unchanged_on_loopback(emulator: Emulator) -> None:
    from google.cloud.aiplatform_v1 import CustomJob

    body = CustomJob.from_json(json.dumps(testing.container_job("stock")))
    for client in (testing.grpc_client(emulator), testing.rest_client(emulator)):
        job = client.create_custom_job(parent=PARENT, custom_job=body)
        assert client.get_custom_job(name=job.name).display_name == "stock"
        client.cancel_custom_job(name=job.name)


def test_a_non_loopback_host_needs_a_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match=r"host: '0\.0\.0\.0' is not a loopback address"):
        Emulator(testing.make_config(tmp_path, host="0.0.0.0"))
    with pytest.raises(ValueError, match="at least 16 characters"):
        check_exposure("127.0.0.1", "short")
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
        check_exposure(host, None)
    check_exposure("0.0.0.0", TOKEN)
    argv = ["--state-dir", str(tmp_path / "s"), "--host", "0.0.0.0", "--grpc-port", "0", "--rest-port", "0"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "--host: '0.0.0.0' is not a loopback address" in err and "--auth-token" in err
    assert not (tmp_path / "s").exists()  # refused before anything was bound or created
    record(
        "non_loopback_without_token",
        "emulator --host 0.0.0.0 (no --auth-token)",
        "refuses to start (exit 2, usage error)",
    )


def test_the_token_file_flag(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    parser = cli.build_parser()
    args = parser.parse_args(["--host", "0.0.0.0", "--auth-token-file", str(token_file)])
    config = config_from_args(args, parser)
    assert config.auth_token == TOKEN and config.host == "0.0.0.0"
    assert TOKEN not in repr(config)


def test_with_a_token_every_rest_call_must_carry_it(guarded: Emulator) -> None:
    web = Http(guarded)
    for path in ("/ui/", "/emulator/stats", "/emulator/faults", JOBS):
        status, data = web.request("GET", path)
        assert status == 401 and data["error"]["status"] == "UNAUTHENTICATED", (path, data)
    record(
        "rest_without_token", "GET customJobs with no Authorization header (token set)", answer(status, data)
    )
    status, data = web.request("POST", JOBS, job_bytes(), {**JSON, "Authorization": "Bearer wrong"})
    assert status == 401, data
    status, data = web.request("POST", JOBS, job_bytes(), {**JSON, "Authorization": f"Basic {TOKEN}"})
    assert status == 401, data
    status, data = web.request("POST", JOBS, job_bytes(), {**JSON, "Authorization": f"Bearer {TOKEN}"})
    assert status == 200, data
    assert job_count(guarded) == 1


def test_the_stock_rest_client_passes_the_token_as_oauth2_credentials(guarded: Emulator) -> None:
    from google.cloud.aiplatform_v1 import CustomJob, JobServiceClient
    from google.oauth2.credentials import Credentials

    client = JobServiceClient(
        transport="rest",
        client_options={"api_endpoint": guarded.rest_endpoint},
        credentials=Credentials(token=TOKEN),  # type: ignore[no-untyped-call]
    )
    job = client.create_custom_job(
        parent=PARENT, custom_job=CustomJob.from_json(json.dumps(testing.container_job("rest-token")))
    )
    assert client.get_custom_job(name=job.name).display_name == "rest-token"
    from google.auth import exceptions as auth_exceptions

    # Without the token the answer is 401, on which the client's session tries to refresh its
    # credentials, which anonymous credentials refuse.
    with pytest.raises(auth_exceptions.InvalidOperation, match="cannot be refreshed"):
        testing.rest_client(guarded, auth=False).get_custom_job(name=job.name)


def test_the_stock_grpc_client_passes_the_token_as_metadata(guarded: Emulator) -> None:
    from google.api_core import exceptions
    from google.cloud.aiplatform_v1 import CustomJob

    client = testing.grpc_client(guarded, auth=False)
    body = CustomJob.from_json(json.dumps(testing.container_job("grpc-token")))
    with pytest.raises(exceptions.Unauthenticated) as info:
        client.create_custom_job(parent=PARENT, custom_job=body)
    record(
        "grpc_without_token",
        "CreateCustomJob without authorization metadata (token set)",
        f"{info.value.grpc_status_code.name}",
    )
    metadata = [("authorization", f"Bearer {TOKEN}")]
    job = client.create_custom_job(parent=PARENT, custom_job=body, metadata=metadata)
    assert client.get_custom_job(name=job.name, metadata=metadata).display_name == "grpc-token"
    with pytest.raises(exceptions.Unauthenticated):  # unserved methods ask for the token first too
        client.get_nas_job(name=f"{PARENT}/nasJobs/1")


def test_with_a_token_the_logging_api_needs_it_too(guarded: Emulator) -> None:
    """The Cloud Logging read API shares the ports, so it shares the token (gRPC and REST)."""
    import grpc
    from google.api_core import exceptions
    from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
    from google.cloud.logging_v2.services.logging_service_v2.transports.grpc import (
        LoggingServiceV2GrpcTransport,
    )

    client = LoggingServiceV2Client(
        transport=LoggingServiceV2GrpcTransport(channel=grpc.insecure_channel(guarded.grpc_target))
    )
    request = {"resource_names": ["projects/local-project"]}
    with pytest.raises(exceptions.Unauthenticated):
        client.list_log_entries(request=request)
    metadata = [("authorization", f"Bearer {TOKEN}")]
    assert list(client.list_log_entries(request=request, metadata=metadata)) == []

    web = Http(guarded)
    body = json.dumps({"resourceNames": ["projects/local-project"]}).encode()
    status, data = web.request("POST", "/v2/entries:list", body, JSON)
    assert status == 401 and data["error"]["status"] == "UNAUTHENTICATED", data
    status, data = web.request("POST", "/v2/entries:list", body, {**JSON, "Authorization": f"Bearer {TOKEN}"})
    assert status == 200, data
