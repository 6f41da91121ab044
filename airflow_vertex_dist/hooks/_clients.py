"""Credentials, JobService and PersistentResourceService clients, retries and proto <-> JSON conversion.

This is the one module that imports ``google.*`` at module level; the hooks import it lazily (inside
methods), so importing ``airflow_vertex_dist.hooks`` from a DAG file loads no ``google.cloud`` module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import google.auth
import google.auth.exceptions
import google.oauth2.credentials
import grpc
import requests
from google.api_core import exceptions as api_exceptions
from google.api_core.client_options import ClientOptions
from google.api_core.gapic_v1.client_info import ClientInfo
from google.api_core.retry import Retry, if_transient_error
from google.api_core.retry_async import AsyncRetry
from google.auth import credentials as auth_credentials
from google.auth import impersonated_credentials
from google.cloud.aiplatform_v1 import types as v1
from google.cloud.aiplatform_v1.services.job_service import JobServiceAsyncClient, JobServiceClient
from google.cloud.aiplatform_v1.services.job_service.transports.grpc import JobServiceGrpcTransport
from google.cloud.aiplatform_v1.services.job_service.transports.grpc_asyncio import (
    JobServiceGrpcAsyncIOTransport,
)
from google.cloud.aiplatform_v1.services.job_service.transports.rest import JobServiceRestTransport
from google.cloud.aiplatform_v1.services.persistent_resource_service import (
    PersistentResourceServiceClient,
)
from google.cloud.aiplatform_v1.services.persistent_resource_service.transports.grpc import (
    PersistentResourceServiceGrpcTransport,
)
from google.cloud.aiplatform_v1.services.persistent_resource_service.transports.rest import (
    PersistentResourceServiceRestTransport,
)
from google.protobuf import field_mask_pb2, json_format

from airflow_vertex_dist.common.version import DISTRIBUTION, package_version
from airflow_vertex_dist.hooks.connection import RetryPolicy, VertexConnection
from airflow_vertex_dist.jobs.kinds import CUSTOM_JOBS, JobKind

__all__ = [
    "SCOPES",
    "emulator_channel",
    "TRANSIENT_ERRORS",
    "TRANSPORT_ERRORS",
    "async_retry",
    "build_async_client",
    "build_credentials",
    "build_resource_client",
    "build_sync_client",
    "field_mask",
    "is_transient",
    "job_from_dict",
    "job_to_dict",
    "sync_retry",
]

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)

#: UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED and INTERNAL, over gRPC and over REST (where they
#: arrive as HTTP 503, 504, 429 and 500: the gRPC exception classes are subclasses of these), and a
#: proxy's 502 over REST.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    api_exceptions.ServiceUnavailable,
    api_exceptions.GatewayTimeout,
    api_exceptions.TooManyRequests,
    api_exceptions.InternalServerError,
    api_exceptions.BadGateway,
)

#: What the REST transport (``requests``, through google-auth's session) raises when no HTTP answer came
#: back: the connection was refused or reset, or it timed out. gRPC reports the same as UNAVAILABLE or
#: DEADLINE_EXCEEDED, already in ``TRANSIENT_ERRORS``.
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (
    requests.exceptions.ConnectionError,
    requests.exceptions.Timeout,
    requests.exceptions.ChunkedEncodingError,
    google.auth.exceptions.TransportError,
)

_CLIENT_INFO = ClientInfo(user_agent=f"{DISTRIBUTION}/{package_version()}")  # type: ignore[no-untyped-call]


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: google.api_core's own transient predicate (``if_transient_error``: 500, 503, 429
    and a dropped connection), plus ``TRANSIENT_ERRORS`` and ``TRANSPORT_ERRORS``, except a response
    larger than the transport carries. The same answer for both transports."""
    if "larger than max" in str(exc).lower():
        # gRPC's RESOURCE_EXHAUSTED for a response past the receive limit: the same call gets the same
        # answer, so it is the caller's to ask for less (the log poller halves its page: logs/pages.py)
        return False
    return isinstance(exc, TRANSIENT_ERRORS + TRANSPORT_ERRORS) or (
        isinstance(exc, Exception) and bool(if_transient_error(exc))
    )


def _retry_settings(policy: RetryPolicy, on_error: Callable[[Exception], None] | None) -> dict[str, Any]:
    """The one retry configuration of both clients: transient errors only, the policy's backoff."""
    return {
        "predicate": is_transient,
        "initial": policy.initial_s,
        "maximum": policy.maximum_s,
        "multiplier": policy.multiplier,
        "timeout": policy.deadline_s,
        "on_error": on_error,
    }


def sync_retry(policy: RetryPolicy, on_error: Callable[[Exception], None] | None = None) -> Retry:
    return Retry(**_retry_settings(policy, on_error))


def async_retry(policy: RetryPolicy, on_error: Callable[[Exception], None] | None = None) -> AsyncRetry:
    return AsyncRetry(**_retry_settings(policy, on_error))


def build_credentials(conn: VertexConnection) -> tuple[auth_credentials.Credentials, str | None]:
    """Credentials for ``conn`` and the project they name (if any).

    Anonymous for the emulator (its access token when the connection has one) or with
    ``is_anonymous``; else key file, key JSON, credential
    configuration file (workload identity federation) or application default credentials, wrapped in
    impersonated credentials when ``impersonation_chain`` is set, and carrying the connection's
    ``quota_project_id`` (sent as ``x-goog-user-project`` on every call). The connection's
    ``project`` wins over the credentials' own; a credential configuration file names none (the
    connection's ``project`` or the task's ``project_id`` is needed).
    """
    if conn.is_emulator:
        token = conn.emulator_auth_token()
        if token is not None:  # sent as ``Authorization: Bearer <token>``; never expires or refreshes
            return google.oauth2.credentials.Credentials(token=token), None  # type: ignore[no-untyped-call]
        return auth_credentials.AnonymousCredentials(), None  # type: ignore[no-untyped-call]
    if conn.is_anonymous:
        # as the Google provider does: a quota project means nothing without an identity
        return auth_credentials.AnonymousCredentials(), conn.project  # type: ignore[no-untyped-call]
    scopes = list(conn.scopes or SCOPES)
    project: str | None
    config = conn.credential_config_file
    if conn.key_path:
        creds, project = google.auth.load_credentials_from_file(  # type: ignore[no-untyped-call]
            conn.key_path, scopes=scopes
        )
    elif conn.keyfile_dict:
        creds, project = google.auth.load_credentials_from_dict(  # type: ignore[no-untyped-call]
            json.loads(conn.keyfile_dict.get_secret_value()), scopes=scopes
        )
    elif config:
        # Loaded unscoped, then scoped: with scopes, google-auth looks the project up at once (a token
        # exchange and a Resource Manager call); here the project is the connection's (or the task's).
        if config.startswith("{"):
            creds, _ = google.auth.load_credentials_from_dict(json.loads(config))  # type: ignore[no-untyped-call]
        else:
            creds, _ = google.auth.load_credentials_from_file(config)  # type: ignore[no-untyped-call]
        creds = auth_credentials.with_scopes_if_required(creds, scopes)  # type: ignore[no-untyped-call]
        project = None
    else:
        creds, project = google.auth.default(scopes=scopes)
    if conn.impersonation_chain:
        *delegates, target = conn.impersonation_chain
        creds = impersonated_credentials.Credentials(  # type: ignore[no-untyped-call]
            source_credentials=creds,
            target_principal=target,
            delegates=list(delegates) or None,
            target_scopes=scopes,
        )
    if conn.quota_project_id:
        if not isinstance(creds, auth_credentials.CredentialsWithQuotaProject):
            raise ValueError(
                f"quota_project_id: the credentials ({type(creds).__name__}) cannot carry a quota "
                "project; use other credentials or remove quota_project_id"
            )
        creds = creds.with_quota_project(conn.quota_project_id)  # type: ignore[no-untyped-call]
    return creds, conn.project or project


def _with_metadata(details: Any, metadata: tuple[tuple[str, str], ...]) -> Any:
    return details._replace(metadata=(*(details.metadata or ()), *metadata))


class _Bearer(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Adds ``authorization: Bearer <token>`` to every call of a plain channel."""

    def __init__(self, token: str) -> None:
        self.metadata = (("authorization", f"Bearer {token}"),)

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(_with_metadata(details, self.metadata), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(_with_metadata(details, self.metadata), request)


class _AsyncBearer(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self, token: str) -> None:
        self.metadata = (("authorization", f"Bearer {token}"),)

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with_metadata(details, self.metadata), request)


def emulator_channel(conn: VertexConnection, target: str, *, aio: bool = False) -> Any:
    """A plain channel to the emulator at ``target`` that sends the connection's emulator access token
    (if any) as ``authorization: Bearer`` metadata on every call (JobService and Logging alike)."""
    token = conn.emulator_auth_token()
    if aio:
        return grpc.aio.insecure_channel(target, interceptors=[_AsyncBearer(token)] if token else None)
    channel = grpc.insecure_channel(target)
    return grpc.intercept_channel(channel, _Bearer(token)) if token else channel


def _regional_endpoint(location: str) -> str:
    return f"{location}-aiplatform.googleapis.com"


def _endpoint(conn: VertexConnection, location: str) -> str:
    """Where a (non-emulator) client goes: the ``api_endpoint`` override (TLS), else the regional one."""
    if not conn.api_endpoint:
        return _regional_endpoint(location)
    return conn.rest_url if conn.transport == "rest" else conn.grpc_target


_C = TypeVar("_C")


@dataclass(frozen=True)
class _Service(Generic[_C]):
    """A v1 service's stock client class and the transport classes ``_build_client`` makes it with."""

    client: Callable[..., _C]
    grpc: Callable[..., Any]  # the transport on the emulator's plain gRPC channel
    rest: Callable[..., Any] | None  # the transport on the emulator's REST endpoint (None: gRPC only)
    aio: bool = False  # an asyncio client: an asyncio channel, the ``grpc_asyncio`` transport


_JOB_SERVICE = _Service(JobServiceClient, JobServiceGrpcTransport, JobServiceRestTransport)
_JOB_SERVICE_ASYNC = _Service(JobServiceAsyncClient, JobServiceGrpcAsyncIOTransport, None, aio=True)
_RESOURCE_SERVICE = _Service(
    PersistentResourceServiceClient,
    PersistentResourceServiceGrpcTransport,
    PersistentResourceServiceRestTransport,
)


def _build_client(service: _Service[_C], conn: VertexConnection, location: str) -> _C:
    """A ``service`` client: the emulator's (anonymous, plain channel or its REST endpoint), or Vertex
    AI's regional endpoint or the connection's ``api_endpoint`` (TLS, the connection's credentials);
    every one sends the provider's user agent."""
    if conn.is_emulator:
        if conn.transport == "rest" and service.rest is not None:
            rest = service.rest(
                host=conn.rest_url, credentials=build_credentials(conn)[0], client_info=_CLIENT_INFO
            )
            return service.client(transport=rest)
        channel = emulator_channel(conn, conn.grpc_target, aio=service.aio)
        return service.client(transport=service.grpc(channel=channel, client_info=_CLIENT_INFO))
    creds, _ = build_credentials(conn)
    return service.client(
        credentials=creds,
        transport="grpc_asyncio" if service.aio else conn.transport,
        client_options=ClientOptions(api_endpoint=_endpoint(conn, location)),
        client_info=_CLIENT_INFO,
    )


def build_sync_client(conn: VertexConnection, location: str) -> JobServiceClient:
    """A JobService client for ``location`` on ``conn`` (``_build_client``)."""
    return _build_client(_JOB_SERVICE, conn, location)


def build_async_client(conn: VertexConnection, location: str) -> JobServiceAsyncClient:
    """An asyncio (gRPC) client; create it inside the event loop that will use it."""
    if conn.transport != "grpc":
        raise ValueError("build_async_client: only the grpc transport has an asyncio client here")
    return _build_client(_JOB_SERVICE_ASYNC, conn, location)


def build_resource_client(conn: VertexConnection, location: str) -> PersistentResourceServiceClient:
    """A PersistentResourceService client for ``location`` on ``conn``, made as the JobService's is
    (``_build_client``)."""
    return _build_client(_RESOURCE_SERVICE, conn, location)


def job_from_dict(kind: JobKind, body: dict[str, Any]) -> Any:
    """The v1 proto message for a JSON job body; ``ValueError`` naming the bad field."""
    cls = v1.CustomJob if kind == CUSTOM_JOBS else v1.HyperparameterTuningJob
    try:
        return cls.from_json(json.dumps(body))
    except Exception as exc:  # json_format.ParseError and friends
        raise ValueError(f"body: not a valid v1 {cls.__name__}: {exc}") from None


def job_to_dict(message: Any) -> dict[str, Any]:
    """A v1 message as its REST JSON: camelCase keys, enum names, default values omitted (what
    ``to_json`` writes, built directly rather than written and read back)."""
    # the defaults are the REST JSON: enum names, camelCase, fields with no presence left out (their
    # keyword changed name in protobuf 5.26, so none is passed: the lowest supported protobuf has the old one)
    result: dict[str, Any] = json_format.MessageToDict(type(message).pb(message))
    return result


def _snake(name: str) -> str:
    return "".join("_" + ch.lower() if ch.isupper() else ch for ch in name)


def field_mask(paths: list[str] | tuple[str, ...] | None) -> field_mask_pb2.FieldMask | None:
    """A FieldMask from JSON (camelCase) or proto (snake_case) paths."""
    if not paths:
        return None
    return field_mask_pb2.FieldMask(paths=[".".join(_snake(p) for p in path.split(".")) for path in paths])
