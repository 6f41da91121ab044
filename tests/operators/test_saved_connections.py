"""Connections saved through Airflow itself, read back through the hooks as a task reads them (the Task
SDK's supervisor channel, the metadata DB behind it).

Saved with ``airflow connections add`` (the CLI, in processes of its own) and with Airflow's REST API
(``POST /api/v2/connections`` on the API server's FastAPI app, in a process of its own through
FastAPI's ``TestClient``), with the extras the Google provider's connection form saves
(``tests/hooks/google_form.py``, which cites the form's source). The Google provider is not installed
here, and Airflow then:

- stores ``airflow connections add --conn-type google_cloud_platform`` as a ``generic`` connection
  (it warns that the type is unknown) and keeps its extras;
- keeps the type given to ``--conn-json``, ``--conn-uri`` and the REST API.

What the form saves with the Google provider installed is the fixtures' business; the type is then
``google_cloud_platform``, which the REST API case stores too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from airflow_vertex_dist.hooks.connection import RetryPolicy, VertexConnection
from tests.hooks.google_form import airflow2_form, airflow3_form, legacy_form
from tests.hooks.tls_servers import Certificate, https_proxy, self_signed
from tests.service_accounts import service_account_info
from vertex_emulator import testing
from vertex_emulator.app import Emulator

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

ROOT = Path(__file__).resolve().parents[2]
QUOTA = "team-billing"
POLICY = RetryPolicy(initial_s=0.1, maximum_s=0.5, deadline_s=20.0, rpc_timeout_s=10.0)

_REST_API = """
import json, sys
from fastapi.testclient import TestClient
from airflow.api_fastapi.app import create_app

with TestClient(create_app(apps="core")) as client:
    for body in json.loads(sys.argv[1]):
        answer = client.post("/api/v2/connections", json=body)
        assert answer.status_code == 201, answer.text
print("saved")
"""


def _environment(**extra: str) -> dict[str, str]:
    """This process's environment, and its Fernet key: the other processes write the connections to
    the metadata DB encrypted with the key this one reads them with (the test configuration makes
    one per process)."""
    from airflow.configuration import conf

    return {**os.environ, "AIRFLOW__CORE__FERNET_KEY": conf.get("core", "fernet_key"), **extra}


def _airflow(*args: str) -> str:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("airflow")), *args],
        cwd=ROOT,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout + done.stderr


def _key_file(directory: Path, token_uri: str) -> Path:
    email = "trainer@key-project.iam.gserviceaccount.com"
    info = service_account_info("key-project", email, token_uri=token_uri)
    path = directory / "sa.json"
    path.write_text(json.dumps(info))
    return path


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def em(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with testing.running_emulator(tmp_path_factory.mktemp("emulator")) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def private_endpoint(em: Emulator, certificate: Certificate) -> Iterator[tuple[str, Any]]:
    """A TLS endpoint (REST) standing for Vertex AI's private endpoint, in front of the emulator."""
    with https_proxy(em.rest_endpoint, certificate) as (url, recorder):
        yield url, recorder


@pytest.fixture(scope="module")
def saved(
    airflow_db: None,
    em: Emulator,
    private_endpoint: tuple[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, dict[str, Any]]:
    """Four connections saved in the metadata DB by Airflow's CLI and REST API: their extras by id."""
    url = private_endpoint[0]
    key_path = str(_key_file(tmp_path_factory.mktemp("key"), f"{url}/token"))
    extras = {
        # Airflow 2's form (prefixed keys, "" blanks) plus the endpoint of the private Vertex AI
        "saved_cli_type": {
            **legacy_form(project="test-project", key_path=key_path, quota_project_id=QUOTA),
            "location": "us-central1",
            "transport": "rest",
            "api_endpoint": url,
            "emulator": False,
            "trusted_endpoint_hosts": "127.0.0.1",
        },
        "saved_cli_json": airflow2_form(project="json-project", keyfile_dict="", quota_project_id=QUOTA),
        "saved_cli_uri": airflow2_form(
            project="uri-project", scope="https://www.googleapis.com/auth/bigquery"
        ),
        # Airflow 3's UI (null blanks) plus the emulator's setting
        "saved_rest": {
            **airflow3_form(project="test-project", quota_project_id=QUOTA),
            "location": "us-central1",
            "emulator": True,
            "api_endpoint": em.grpc_target,
            "web_endpoint": em.rest_endpoint,
        },
    }
    out = _airflow(
        "connections", "add", "saved_cli_type",
        "--conn-type", "google_cloud_platform",
        "--conn-extra", json.dumps(extras["saved_cli_type"]),
    )  # fmt: skip
    assert "The type provided to --conn-type is invalid: google_cloud_platform" in out
    assert "Hence overriding the conn-type with generic" in out
    body = {"conn_type": "google_cloud_platform", "extra": extras["saved_cli_json"]}
    _airflow("connections", "add", "saved_cli_json", "--conn-json", json.dumps(body))
    uri = "google-cloud-platform://?__extra__=" + quote(json.dumps(extras["saved_cli_uri"]))
    _airflow("connections", "add", "saved_cli_uri", "--conn-uri", uri)
    extra = json.dumps(extras["saved_rest"])
    rest = [{"connection_id": "saved_rest", "conn_type": "google_cloud_platform", "extra": extra}]
    env = _environment(AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS="True")
    done = subprocess.run(
        [sys.executable, "-c", _REST_API, json.dumps(rest)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0 and "saved" in done.stdout, done.stderr[-4000:]
    return extras


def _stored_type(conn_id: str) -> str:
    from airflow.models import Connection
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        row = session.scalar(select(Connection).where(Connection.conn_id == conn_id))
        assert row is not None, conn_id
        return str(row.conn_type)


@pytest.mark.usefixtures("supervisor_channel")
@pytest.mark.parametrize(
    ("conn_id", "stored_type"),
    [
        ("saved_cli_type", "generic"),
        ("saved_cli_json", "google_cloud_platform"),
        ("saved_cli_uri", "google_cloud_platform"),
        ("saved_rest", "google_cloud_platform"),
    ],
)
def test_a_saved_connection_is_read_as_the_form_saved_it(
    saved: dict[str, dict[str, Any]], conn_id: str, stored_type: str
) -> None:
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

    assert _stored_type(conn_id) == stored_type
    read = VertexJobsHook(conn_id, location="us-central1").connection
    assert read == VertexConnection.from_extra(saved[conn_id])  # the extras came back whole
    expected = {
        "saved_cli_type": ("test-project", QUOTA, "rest", False),
        "saved_cli_json": ("json-project", QUOTA, "grpc", None),
        "saved_cli_uri": ("uri-project", None, "grpc", None),
        "saved_rest": ("test-project", QUOTA, "grpc", True),
    }[conn_id]
    assert (read.project, read.quota_project_id, read.transport, read.emulator) == expected
    assert read.num_retries == 5 and read.is_anonymous is False
    assert (read.key_path is not None) == (conn_id == "saved_cli_type")
    if conn_id == "saved_cli_uri":
        assert read.scopes == ("https://www.googleapis.com/auth/bigquery",)


@pytest.mark.usefixtures("supervisor_channel")
def test_a_cli_saved_connection_bills_its_quota_project_over_a_private_endpoint(
    saved: dict[str, dict[str, Any]],
    private_endpoint: tuple[str, Any],
    certificate: Certificate,
    em: Emulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ``generic`` connection the CLI stored: its key, its quota project, its private endpoint."""
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate.cert))  # the private endpoint's CA
    recorder = private_endpoint[1]
    with VertexJobsHook("saved_cli_type", retry_policy=POLICY) as hook:
        job = hook.create_custom_job(testing.container_job("saved-cli", "print('ok')"))
        assert hook.get_job(job["name"])["displayName"] == "saved-cli"
    assert em.store.get(job["name"])["displayName"] == "saved-cli"
    calls = [call for call in recorder.snapshot() if "/customJobs" in call.target]
    assert calls and all(call.user_project == QUOTA for call in calls), calls
    assert all(call.authorization.startswith("Bearer ") for call in calls), calls


@pytest.mark.usefixtures("supervisor_channel")
def test_a_rest_saved_connection_runs_a_job_on_the_emulator(
    saved: dict[str, dict[str, Any]], em: Emulator
) -> None:
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

    with VertexJobsHook("saved_rest", retry_policy=POLICY) as hook:
        assert hook.is_emulator
        job = hook.create_custom_job(testing.container_job("saved-rest", "print('ok')"))
        assert hook.console_url(job["name"]) == f"{em.rest_endpoint}/ui/{job['name']}"
    ended = testing.wait_for_state(em, job["name"], ["JOB_STATE_SUCCEEDED"], timeout=60)
    assert ended["displayName"] == "saved-rest"
