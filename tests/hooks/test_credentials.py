"""Credentials from the connection: key JSON, key file, application default, impersonation (offline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import impersonated_credentials
from google.auth.credentials import AnonymousCredentials
from google.oauth2 import service_account

from airflow_vertex_dist.hooks._clients import build_credentials, build_sync_client
from airflow_vertex_dist.hooks.connection import VertexConnection


@pytest.fixture(scope="module")
def key_info() -> dict[str, Any]:
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


def test_key_json(key_info: dict[str, Any]) -> None:
    creds, project = build_credentials(VertexConnection.from_extra({"keyfile_dict": json.dumps(key_info)}))
    assert isinstance(creds, service_account.Credentials)
    assert creds.service_account_email == key_info["client_email"]
    assert project == "key-project"


def test_key_file(key_info: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "key.json"
    path.write_text(json.dumps(key_info))
    creds, project = build_credentials(VertexConnection.from_extra({"key_path": str(path)}))
    assert isinstance(creds, service_account.Credentials)
    assert project == "key-project"


def test_application_default(
    key_info: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "adc.json"
    path.write_text(json.dumps(key_info))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    creds, project = build_credentials(VertexConnection.from_extra({}))
    assert isinstance(creds, service_account.Credentials)
    assert project == "key-project"


def test_impersonation_chain(key_info: dict[str, Any]) -> None:
    conn = VertexConnection.from_extra(
        {
            "keyfile_dict": key_info,
            "impersonation_chain": "hop@p.iam.gserviceaccount.com,target@p.iam.gserviceaccount.com",
        }
    )
    creds, _ = build_credentials(conn)
    assert isinstance(creds, impersonated_credentials.Credentials)
    assert creds._target_principal == "target@p.iam.gserviceaccount.com"
    assert creds._delegates == ["hop@p.iam.gserviceaccount.com"]
    assert creds._source_credentials.service_account_email == key_info["client_email"]


def test_emulator_is_anonymous_and_credentials_are_ignored(key_info: dict[str, Any]) -> None:
    conn = VertexConnection.from_extra(
        {"api_endpoint": "127.0.0.1:1", "emulator": True, "keyfile_dict": key_info, "quota_project_id": "q"}
    )
    creds, project = build_credentials(conn)
    assert isinstance(creds, AnonymousCredentials) and project is None


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_vertex_client_uses_the_regional_endpoint(key_info: dict[str, Any], transport: str) -> None:
    conn = VertexConnection.from_extra({"keyfile_dict": key_info, "transport": transport})
    client = build_sync_client(conn, "europe-west4")  # no network until the first call
    assert "europe-west4-aiplatform.googleapis.com" in client.transport._host
    client.transport.close()


@pytest.mark.parametrize(
    ("transport", "endpoint", "host"),
    [
        ("grpc", "psc1.p.googleapis.com", "psc1.p.googleapis.com:443"),
        ("grpc", "10.8.0.5:8443", "10.8.0.5:8443"),
        ("rest", "10.8.0.5:8443", "https://10.8.0.5:8443"),
        ("rest", "https://vertex.psc.internal", "https://vertex.psc.internal"),
    ],
)
def test_an_endpoint_override_keeps_the_connections_credentials(
    key_info: dict[str, Any], transport: str, endpoint: str, host: str
) -> None:
    """The override replaces the regional endpoint only: the key's credentials (with the quota project),
    over TLS (a secure channel / an https URL); the call itself is shown in test_endpoint_tls.py."""
    extra = {"keyfile_dict": key_info, "transport": transport, "api_endpoint": endpoint}
    extra.update(quota_project_id="q", trusted_endpoint_hosts="10.8.0.5, vertex.psc.internal")
    client = build_sync_client(VertexConnection.from_extra(extra), "europe-west4")
    try:
        assert client.transport._host == host
        creds = client.transport._credentials
        assert isinstance(creds, service_account.Credentials) and creds.quota_project_id == "q"
    finally:
        client.transport.close()


# -- quota_project_id: on the credentials of every kind, hence on every call ---------------------------


def test_quota_project_on_key_json_key_file_and_application_default(
    key_info: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "key.json"
    path.write_text(json.dumps(key_info))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    for extra in ({"keyfile_dict": key_info}, {"key_path": str(path)}, {}):
        creds, project = build_credentials(VertexConnection.from_extra({**extra, "quota_project_id": "bill"}))
        assert creds.quota_project_id == "bill", extra
        assert project == "key-project"  # the quota project is not the job's project
        headers: dict[str, str] = {}
        creds.apply(headers, token="t")
        assert headers["x-goog-user-project"] == "bill"
        creds, _ = build_credentials(VertexConnection.from_extra(extra))
        assert creds.quota_project_id is None


@pytest.mark.usefixtures("no_http")
def test_quota_project_on_impersonation_and_workload_identity(
    key_info: dict[str, Any], tmp_path: Path
) -> None:
    chain = {"keyfile_dict": key_info, "impersonation_chain": "t@p.iam.gserviceaccount.com"}
    creds, _ = build_credentials(VertexConnection.from_extra({**chain, "quota_project_id": "bill"}))
    assert isinstance(creds, impersonated_credentials.Credentials) and creds.quota_project_id == "bill"
    wif = {"credential_config_file": _external_account(tmp_path), "quota_project_id": "bill"}
    creds, _ = build_credentials(VertexConnection.from_extra(wif))
    assert creds.quota_project_id == "bill"


def test_quota_project_is_ignored_with_anonymous_credentials() -> None:
    creds, _ = build_credentials(VertexConnection.from_extra({"is_anonymous": True, "quota_project_id": "q"}))
    assert isinstance(creds, AnonymousCredentials)


# -- google_cloud_platform connections, as the Google provider's form and docs write them -------------


def _hook_for(monkeypatch: pytest.MonkeyPatch, extra: dict[str, Any], **hook_kwargs: Any) -> Any:
    """A hook reading an env ``google_cloud_platform`` connection ``gcp_test`` with ``extra``."""
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

    monkeypatch.setenv(
        "AIRFLOW_CONN_GCP_TEST", json.dumps({"conn_type": "google_cloud_platform", "extra": extra})
    )
    return VertexJobsHook("gcp_test", location="us-central1", **hook_kwargs)


@pytest.fixture
def no_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building credentials must not call out: any google-auth HTTP request fails the test."""
    from google.auth.transport import requests as auth_requests

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"unexpected HTTP request: {args} {kwargs}")

    monkeypatch.setattr(auth_requests.Request, "__call__", refuse)


@pytest.mark.parametrize("prefixed", [False, True])
def test_gcp_connection_key_path(
    key_info: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefixed: bool
) -> None:
    path = tmp_path / "key.json"
    path.write_text(json.dumps(key_info))
    prefix = "extra__google_cloud_platform__" if prefixed else ""
    # The Google provider's form saves every field, the unused ones empty.
    extra = {
        f"{prefix}key_path": str(path),
        f"{prefix}keyfile_dict": "",
        f"{prefix}key_secret_name": "",
        f"{prefix}num_retries": 5,
        f"{prefix}scope": "",
        f"{prefix}is_anonymous": False,
    }
    hook = _hook_for(monkeypatch, extra)
    creds, project = build_credentials(hook.connection)
    assert isinstance(creds, service_account.Credentials)
    assert creds.service_account_email == key_info["client_email"]
    assert project == "key-project"
    assert hook.parent == "projects/key-project/locations/us-central1"


def test_gcp_connection_keyfile_dict_project_and_scope(
    key_info: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = {
        "extra__google_cloud_platform__keyfile_dict": json.dumps(key_info),
        "extra__google_cloud_platform__project": "other-project",
        "extra__google_cloud_platform__scope": "https://www.googleapis.com/auth/cloud-platform.read-only, "
        "https://www.googleapis.com/auth/userinfo.email",
    }
    hook = _hook_for(monkeypatch, extra)
    creds, project = build_credentials(hook.connection)
    assert isinstance(creds, service_account.Credentials)
    assert project == "other-project"  # the connection's project wins over the key's
    assert creds.scopes == [
        "https://www.googleapis.com/auth/cloud-platform.read-only",
        "https://www.googleapis.com/auth/userinfo.email",
    ]


def _external_account(tmp_path: Path) -> dict[str, Any]:
    token = tmp_path / "oidc-token"
    token.write_text("header.payload.signature")
    return {
        "type": "external_account",
        "audience": "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/pool/"
        "providers/oidc",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": "https://sts.googleapis.com/v1/token",
        "credential_source": {"file": str(token)},
    }


@pytest.mark.usefixtures("no_http")
@pytest.mark.parametrize("form", ["path", "json"])
def test_gcp_connection_credential_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    from google.auth import identity_pool

    config = _external_account(tmp_path)
    path = tmp_path / "wif.json"
    path.write_text(json.dumps(config))
    value = str(path) if form == "path" else json.dumps(config)
    hook = _hook_for(monkeypatch, {"credential_config_file": value, "project": "wif-project"})
    creds, project = build_credentials(hook.connection)
    assert isinstance(creds, identity_pool.Credentials)
    assert creds._audience == config["audience"]
    assert creds.scopes == ["https://www.googleapis.com/auth/cloud-platform"]
    assert project == "wif-project"
    assert hook.project_id == "wif-project"


def test_gcp_connection_impersonation_chain_and_a_tasks_own(
    key_info: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = {
        "keyfile_dict": json.dumps(key_info),
        "impersonation_chain": "conn-target@p.iam.gserviceaccount.com",
    }
    creds, _ = build_credentials(_hook_for(monkeypatch, extra).connection)
    assert isinstance(creds, impersonated_credentials.Credentials)
    assert creds._target_principal == "conn-target@p.iam.gserviceaccount.com"
    assert not creds._delegates

    chain = ["hop@p.iam.gserviceaccount.com", "task-target@p.iam.gserviceaccount.com"]
    creds, _ = build_credentials(_hook_for(monkeypatch, extra, impersonation_chain=chain).connection)
    assert isinstance(creds, impersonated_credentials.Credentials)
    assert creds._target_principal == "task-target@p.iam.gserviceaccount.com"
    assert creds._delegates == ["hop@p.iam.gserviceaccount.com"]
    assert creds._source_credentials.service_account_email == key_info["client_email"]


def test_gcp_connection_anonymous(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = _hook_for(monkeypatch, {"is_anonymous": True, "project": "anon"})
    creds, project = build_credentials(hook.connection)
    assert isinstance(creds, AnonymousCredentials)
    assert project == "anon"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"key_secret_name": "my-key"}, r"gcp_test\.extra\.key_secret_name: a key kept in Secret Manager"),
        ({"client_secret": "s"}, r"gcp_test\.extra\.client_secret: the client credentials grant flow"),
        ({"key_pth": "/k.json"}, r"gcp_test\.extra\.key_pth: unknown field \(did you mean key_path\?"),
        ({"num_retries": -1}, r"gcp_test\.extra\.num_retries: Input should be greater than or equal to 0"),
        (
            {"key_path": "/k.json", "credential_config_file": "/c.json"},
            r"gcp_test\.extra: key_path and credential_config_file: give one credentials source",
        ),
        ({"credential_config_file": "{oops"}, r"credential_config_file: must be a credential configuration"),
    ],
)
def test_gcp_connection_errors_name_the_field(
    monkeypatch: pytest.MonkeyPatch, extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _ = _hook_for(monkeypatch, extra).connection


def test_other_connection_types_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

    monkeypatch.setenv("AIRFLOW_CONN_PG", json.dumps({"conn_type": "postgres", "extra": {}}))
    with pytest.raises(ValueError, match=r"pg\.conn_type: 'postgres' is not a connection these hooks read"):
        _ = VertexJobsHook("pg").connection


def test_the_key_never_shows(key_info: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    secret = key_info["private_key"].splitlines()[1]
    conn = VertexConnection.from_extra({"keyfile_dict": key_info})
    assert secret not in repr(conn) and secret not in str(conn)
    assert "keyfile_dict" not in repr(conn)
    # an error elsewhere in the connection does not echo the key
    with pytest.raises(ValueError) as info:
        VertexConnection.from_extra({"keyfile_dict": key_info, "transport": "http2", "projet": "p"})
    assert secret not in str(info.value)


@pytest.mark.parametrize(
    ("extra", "rest", "where"),
    [
        ({}, False, "logging.googleapis.com"),
        ({"api_endpoint": "vertex.psc.internal"}, False, "logging.googleapis.com"),
        ({"logging_endpoint": "logging-psc1.p.googleapis.com"}, False, "logging-psc1.p.googleapis.com"),
        ({"logging_endpoint": "dns:///logging.psc.internal:443"}, False, "logging.psc.internal"),
        ({"logging_endpoint": "https://logging.psc.internal"}, True, "https://logging.psc.internal/v2/"),
        ({"logging_endpoint": "logging.psc.internal", "transport": "rest"}, False, "logging.psc.internal"),
    ],
)
def test_the_logs_client_has_the_connections_credentials_off_the_emulator(
    key_info: dict[str, Any], monkeypatch: pytest.MonkeyPatch, extra: dict[str, Any], rest: bool, where: str
) -> None:
    from airflow_vertex_dist.hooks.logs import VertexLogsHook

    extra = {"project": "p", "keyfile_dict": key_info, "quota_project_id": "q", **extra}
    extra["trusted_endpoint_hosts"] = "*.psc.internal"
    monkeypatch.setenv("AIRFLOW_CONN_LOGS", json.dumps({"conn_type": "vertex_dist", "extra": extra}))
    hook = VertexLogsHook("logs")
    client = hook.get_conn()  # no network until the first call
    try:
        assert hook._rest is rest
        creds = client.credentials if rest else client.transport._credentials
        assert isinstance(creds, service_account.Credentials) and creds.quota_project_id == "q"
        assert where in (hook._rest_url if rest else client.transport._host)
    finally:
        hook.close()


def test_the_logs_client_of_the_emulator_is_plain_and_anonymous(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_vertex_dist.hooks.logs import VertexLogsHook

    extra = {"project": "p", "api_endpoint": "http://127.0.0.1:9", "transport": "rest", "emulator": True}
    monkeypatch.setenv("AIRFLOW_CONN_LOGS", json.dumps({"conn_type": "vertex_dist", "extra": extra}))
    hook = VertexLogsHook("logs")
    session = hook.get_conn()
    try:
        assert hook._rest and hook._rest_url == "http://127.0.0.1:9/v2/entries:list"
        assert isinstance(session.credentials, AnonymousCredentials)
    finally:
        hook.close()
