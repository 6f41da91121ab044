"""Helpers for the Logging API tests: the stock google-cloud-logging clients wired to an emulator.

``logging_client(em, grpc=...)`` is the library's own ``google.cloud.logging.Client`` -- over
HTTP/JSON pointed at the emulator's REST port, or over gRPC with its generated client on an
insecure channel to the emulator's gRPC port (the library has no option for an insecure channel,
so the test gives it the generated client it would otherwise build) -- and ``Client.list_entries``
is called the way users call it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT

__all__ = ["PROJECT", "custom", "gapic", "job_filter", "logging_client", "post", "text_of"]

PROJECT = PARENT.split("/")[1]


def custom(body: dict[str, Any]) -> Any:
    from google.cloud import aiplatform_v1

    return aiplatform_v1.CustomJob.from_json(json.dumps(body))


def gapic(em: Emulator) -> Any:
    """The generated ``LoggingServiceV2Client`` over an insecure channel to the emulator."""
    import grpc
    from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
    from google.cloud.logging_v2.services.logging_service_v2.transports.grpc import (
        LoggingServiceV2GrpcTransport,
    )

    return LoggingServiceV2Client(
        transport=LoggingServiceV2GrpcTransport(channel=grpc.insecure_channel(em.grpc_target))
    )


def logging_client(em: Emulator, *, grpc: bool) -> Any:
    """The stock ``google.cloud.logging.Client`` of the emulator's project (see the module doc)."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import logging as cloud_logging

    if not grpc:
        return cloud_logging.Client(
            project=PROJECT,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            _use_grpc=False,
            client_options={"api_endpoint": em.rest_endpoint},
        )
    from google.cloud.logging_v2 import _gapic

    client = cloud_logging.Client(
        project=PROJECT,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        _use_grpc=True,
    )
    client._logging_api = _gapic._LoggingAPI(gapic(em), client)
    return client


def post(em: Emulator, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``POST /v2/entries:list`` as raw JSON: (status, body)."""
    request = urllib.request.Request(
        em.rest_endpoint + "/v2/entries:list",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def job_filter(job_id: str, extra: str = "") -> str:
    return f'resource.type="ml_job" AND resource.labels.job_id="{job_id}"' + (
        f" AND {extra}" if extra else ""
    )


def text_of(entry: Any) -> str:
    """An entry's line: ``jsonPayload.message`` for a replica's, ``textPayload`` for the service's,
    from a library entry object, a generated ``LogEntry`` or a v2 JSON dict."""
    if isinstance(entry, dict):
        payload = entry.get("jsonPayload")
        return str(payload["message"]) if payload is not None else str(entry.get("textPayload"))
    payload = getattr(entry, "payload", None)
    if payload is not None:  # google.cloud.logging entries
        return str(payload["message"]) if isinstance(payload, dict) else str(payload)
    if entry.text_payload:
        return str(entry.text_payload)
    return str(entry.json_payload["message"])
