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
    conn = VertexConnection.from_extra({"api_endpoint": "127.0.0.1:1", "keyfile_dict": key_info})
    creds, project = build_credentials(conn)
    assert isinstance(creds, AnonymousCredentials) and project is None


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_vertex_client_uses_the_regional_endpoint(key_info: dict[str, Any], transport: str) -> None:
    conn = VertexConnection.from_extra({"keyfile_dict": key_info, "transport": transport})
    client = build_sync_client(conn, "europe-west4")  # no network until the first call
    assert "europe-west4-aiplatform.googleapis.com" in client.transport._host
    client.transport.close()
