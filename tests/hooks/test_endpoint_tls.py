"""An endpoint override is a private endpoint reached over TLS with the connection's real credentials
and its quota project, not the emulator: the hooks (JobService sync and asyncio, Cloud Logging) call
local TLS endpoints (``tls_servers.py``, a self-signed certificate the client is told to trust) that
stand in front of the emulator and record what each call carried.

The credentials are a service account key file made here whose ``token_uri`` is the local HTTPS
endpoint: the clients either sign a JWT with the key (self-signed JWT, the GAPIC clients' way) or
exchange one for an access token there; either way each call's ``authorization`` is checked to be this
key's (the JWT verified with its public key) or the token issued for it, and its
``x-goog-user-project`` to be the connection's ``quota_project_id``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import jwt

from airflow_vertex_dist.common.version import DISTRIBUTION, package_version
from tests.service_accounts import service_account_info
from vertex_emulator import testing
from vertex_emulator.app import Emulator

from .tls_servers import ISSUED_TOKEN, Call, Certificate, grpc_tls_proxy, https_proxy, self_signed

ROOT = Path(__file__).resolve().parents[2]
EMAIL = "trainer@team-project.iam.gserviceaccount.com"
QUOTA = "team-billing"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _key_file(directory: Path, key: rsa.RSAPrivateKey, token_uri: str) -> Path:
    info = service_account_info("team-project", EMAIL, token_uri=token_uri, key=key)
    path = directory / "sa.json"
    path.write_text(json.dumps(info))
    return path


def _is_this_keys(authorization: str, key: rsa.RSAPrivateKey) -> bool:
    """``Bearer <token>`` where the token is the one issued for the key or a JWT the key signed."""
    scheme, _, token = authorization.partition(" ")
    if scheme != "Bearer" or not token:
        return False
    if token == ISSUED_TOKEN:
        return True
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    try:
        claims = jwt.decode(token, certs=public.decode(), verify=True)
    except ValueError:
        return False
    return bool(claims.get("iss") == EMAIL)


@pytest.fixture
def endpoints(em: Emulator, certificate: Certificate) -> Iterator[dict[str, Any]]:
    with grpc_tls_proxy(em.grpc_target, certificate) as (grpc_target, grpc_calls):
        with https_proxy(em.rest_endpoint, certificate) as (https_url, https_calls):
            yield {"grpc": (grpc_target, grpc_calls), "rest": (https_url, https_calls)}


def _run_hooks(
    extra: dict[str, Any], certificate: Certificate, name: str, client: str = "endpoint_client"
) -> dict[str, Any]:
    """Run ``tests/hooks/<client>.py`` with ``extra`` as the default connection: its printed result."""
    env = {
        **os.environ,
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT": json.dumps({"conn_type": "vertex_dist", "extra": extra}),
        # the client trusts the endpoints' certificate, as it would a private CA's
        "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(certificate.cert),
        "REQUESTS_CA_BUNDLE": str(certificate.cert),
    }
    env.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
    arg = (
        name if client != "endpoint_client" else json.dumps(testing.container_job(name, "print('over tls')"))
    )
    done = subprocess.run(
        [sys.executable, "-m", f"tests.hooks.{client}", arg],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_hooks_call_an_endpoint_override_over_tls_with_real_credentials(
    em: Emulator,
    endpoints: dict[str, Any],
    certificate: Certificate,
    signing_key: rsa.RSAPrivateKey,
    tmp_path: Path,
    transport: str,
) -> None:
    https_url = endpoints["rest"][0]
    endpoint, recorder = endpoints[transport]
    extra = {
        "project": "test-project",
        "location": "us-central1",
        "transport": transport,
        "api_endpoint": endpoint,
        "emulator": False,  # a loopback endpoint: saying it is not the emulator is required
        "trusted_endpoint_hosts": "127.0.0.1",  # not a Google host: the credentials go there by name only
        "logging_endpoint": endpoint,
        "key_path": str(_key_file(tmp_path, signing_key, f"{https_url}/token")),
        "quota_project_id": QUOTA,
    }
    result = _run_hooks(extra, certificate, f"tls-{transport}")
    assert result["name"].startswith("projects/test-project/locations/us-central1/customJobs/")
    assert result["listed"] == [result["name"]]
    assert result["state"] == result["async_state"] or result["async_state"].startswith("JOB_STATE_")
    assert em.store.get(result["name"])["displayName"] == f"tls-{transport}"

    calls: list[Call] = recorder.snapshot()
    targets = " ".join(call.target for call in calls)
    if transport == "grpc":
        for method in ("CreateCustomJob", "GetCustomJob", "ListCustomJobs", "ListLogEntries"):
            assert f"/{method}" in targets, targets
    else:
        assert "POST /v1/projects/test-project/locations/us-central1/customJobs" in targets, targets
        assert "POST /v2/entries:list" in targets, targets
    for call in calls:
        assert _is_this_keys(call.authorization, signing_key), call
        assert call.user_project == QUOTA, call


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_persistent_resource_hook_calls_an_endpoint_override_as_the_job_hook_does(
    em: Emulator,
    endpoints: dict[str, Any],
    certificate: Certificate,
    signing_key: rsa.RSAPrivateKey,
    tmp_path: Path,
    transport: str,
) -> None:
    """The PersistentResourceService client is made as the JobService's is: the override over TLS,
    the key's credentials, the quota project, and the provider's user agent on every call."""
    https_url = endpoints["rest"][0]
    endpoint, recorder = endpoints[transport]
    extra = {
        "project": "test-project",
        "location": "us-central1",
        "transport": transport,
        "api_endpoint": endpoint,
        "emulator": False,
        "trusted_endpoint_hosts": "127.0.0.1",
        "key_path": str(_key_file(tmp_path, signing_key, f"{https_url}/token")),
        "quota_project_id": QUOTA,
    }
    result = _run_hooks(extra, certificate, f"tls-{transport}", client="resource_endpoint_client")
    assert (
        result["name"] == f"projects/test-project/locations/us-central1/persistentResources/tls-{transport}"
    )
    assert result["created"] and result["deleted"] and result["name"] in result["listed"]

    calls: list[Call] = recorder.snapshot()
    targets = " ".join(call.target for call in calls)
    if transport == "grpc":
        for method in ("Create", "Get", "List", "Delete"):
            assert f"PersistentResourceService/{method}PersistentResource" in targets, targets
    else:
        assert "POST /v1/projects/test-project/locations/us-central1/persistentResources" in targets, targets
    user_agent = f"{DISTRIBUTION}/{package_version()} "
    for call in calls:
        assert _is_this_keys(call.authorization, signing_key), call
        assert call.user_project == QUOTA, call
        assert call.api_client.startswith(user_agent), call


def test_the_endpoints_speak_tls_only(endpoints: dict[str, Any]) -> None:
    """The plain channel the emulator is reached with does not work on them: the calls above were TLS."""
    from google.cloud.aiplatform_v1 import JobServiceClient
    from google.cloud.aiplatform_v1.services.job_service.transports.grpc import JobServiceGrpcTransport

    target, recorder = endpoints["grpc"]
    client = JobServiceClient(transport=JobServiceGrpcTransport(channel=grpc.insecure_channel(target)))
    with pytest.raises(Exception, match="UNAVAILABLE|Unavailable|ServiceUnavailable|503"):
        client.get_custom_job(name="projects/p/locations/us-central1/customJobs/1", timeout=5, retry=None)
    assert recorder.snapshot() == []
