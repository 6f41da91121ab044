"""Helpers for tests and demos: a running emulator and the STOCK aiplatform clients wired to it.

The clients are the unmodified ``google.cloud.aiplatform_v1`` ``JobServiceClient`` /
``JobServiceAsyncClient`` -- over an insecure gRPC channel, or over REST with anonymous
credentials -- so whatever works here works against the real service the same way. An emulator
started with an access token gets it from them on every call (``authorization: Bearer`` metadata,
or bearer credentials over REST), as the real service gets an OAuth token.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc

from vertex_emulator.app import Emulator
from vertex_emulator.core.config import EmulatorConfig

__all__ = [
    "PARENT",
    "async_grpc_client",
    "container_job",
    "grpc_client",
    "make_config",
    "rest_client",
    "running_emulator",
    "tuning_job",
    "wait_for_state",
]

#: The location most tests create jobs in.
PARENT = "projects/test-project/locations/us-central1"


def container_job(
    display_name: str,
    code: str = "pass",
    *,
    labels: dict[str, str] | None = None,
    workers: int = 0,
    **extra_spec: Any,
) -> dict[str, Any]:
    """A v1 CustomJob body whose replicas run ``python -c code`` (this interpreter) on the host."""
    import sys

    def pool(count: int) -> dict[str, Any]:
        return {
            "machineSpec": {"machineType": "n1-standard-4"},
            "replicaCount": str(count),
            "containerSpec": {"imageUri": "python:3.11", "command": [sys.executable, "-c", code]},
        }

    pools = [pool(1)] + ([pool(workers)] if workers else [])
    body: dict[str, Any] = {"displayName": display_name, "jobSpec": {"workerPoolSpecs": pools, **extra_spec}}
    if labels:
        body["labels"] = dict(labels)
    return body


def tuning_job(
    display_name: str,
    code: str = "pass",
    *,
    max_trials: int = 2,
    parallel: int = 1,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A v1 HyperparameterTuningJob body: grid search over an integer ``x`` in [1, max_trials]."""
    trial = container_job(display_name, code)["jobSpec"]
    body: dict[str, Any] = {
        "displayName": display_name,
        "studySpec": {
            "metrics": [{"metricId": "score", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameterId": "x", "integerValueSpec": {"minValue": "1", "maxValue": str(max_trials)}}
            ],
            "algorithm": "GRID_SEARCH",
        },
        "maxTrialCount": max_trials,
        "parallelTrialCount": parallel,
        "trialJobSpec": trial,
    }
    if labels:
        body["labels"] = dict(labels)
    return body


def make_config(tmp_path: Path, **overrides: Any) -> EmulatorConfig:
    """An EmulatorConfig with its state dir and gs:// root under ``tmp_path``."""
    overrides.setdefault("state_dir", Path(tmp_path) / "emulator-state")
    overrides.setdefault("gcs_root", Path(tmp_path) / "gcs")
    return EmulatorConfig(**overrides)


@contextmanager
def running_emulator(tmp_path: Path, **config_overrides: Any) -> Iterator[Emulator]:
    """Start an emulator on ephemeral loopback ports for the duration of the ``with`` block."""
    emulator = Emulator(make_config(tmp_path, **config_overrides))
    try:
        emulator.start()
        yield emulator
    finally:
        emulator.stop()


def _bearer(em: Emulator, auth: bool) -> tuple[tuple[str, str], ...]:
    token = em.config.auth_token if auth else None
    return (("authorization", f"Bearer {token}"),) if token else ()


def grpc_client(em: Emulator, *, auth: bool = True) -> Any:
    """The stock ``JobServiceClient`` over an insecure gRPC channel to the emulator; with the emulator's
    access token as ``authorization`` metadata on every call when it has one (``auth=False``: not)."""
    from google.cloud.aiplatform_v1 import JobServiceClient
    from google.cloud.aiplatform_v1.services.job_service.transports.grpc import JobServiceGrpcTransport

    channel = grpc.insecure_channel(em.grpc_target)
    metadata = _bearer(em, auth)
    if metadata:
        channel = grpc.intercept_channel(channel, _Metadata(metadata))
    return JobServiceClient(transport=JobServiceGrpcTransport(channel=channel))


def async_grpc_client(em: Emulator, *, auth: bool = True) -> Any:
    """The stock ``JobServiceAsyncClient`` over an insecure asyncio gRPC channel (create it in the loop);
    the access token as in ``grpc_client``."""
    from google.cloud.aiplatform_v1 import JobServiceAsyncClient
    from google.cloud.aiplatform_v1.services.job_service.transports.grpc_asyncio import (
        JobServiceGrpcAsyncIOTransport,
    )
    metadata = _bearer(em, auth)
    interceptors = [_AsyncMetadata(metadata)] if metadata else None
    channel = grpc.aio.insecure_channel(em.grpc_target, interceptors=interceptors)
    return JobServiceAsyncClient(transport=JobServiceGrpcAsyncIOTransport(channel=channel))


def rest_client(em: Emulator, *, auth: bool = True) -> Any:
    """The stock ``JobServiceClient`` with its REST transport pointed at the emulator's HTTP endpoint:
    anonymous credentials, or the emulator's access token (``Authorization: Bearer``) when it has one."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.aiplatform_v1 import JobServiceClient
    from google.oauth2.credentials import Credentials

    token = em.config.auth_token if auth else None
    creds: Any = Credentials(token=token) if token else AnonymousCredentials()  # type: ignore[no-untyped-call]
    options = {"api_endpoint": em.rest_endpoint}
    return JobServiceClient(transport="rest", client_options=options, credentials=creds)


class _Metadata(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Adds fixed metadata (the access token) to every unary call of a channel."""

    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self.metadata = metadata

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(details._replace(metadata=(*(details.metadata or ()), *self.metadata)), request)


class _AsyncMetadata(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self.metadata = metadata

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        merged = (*(details.metadata or ()), *self.metadata)
        return await continuation(details._replace(metadata=merged), request)


def _state_name(state: Any) -> str:
    return str(getattr(state, "name", state))


def wait_for_state(
    client_or_em: Any, name: str, states: Collection[str], timeout: float = 30.0, interval: float = 0.05
) -> Any:
    """Poll a job until its state is one of ``states`` (names like ``JOB_STATE_SUCCEEDED``).

    ``client_or_em`` is an ``Emulator`` (reads the store; returns the v1 JSON dict) or a sync
    ``JobServiceClient`` (calls Get; returns the proto). Raises TimeoutError naming the last state.
    """
    wanted = {_state_name(s) for s in states}
    deadline = time.monotonic() + timeout
    is_tuning = "/hyperparameterTuningJobs/" in name
    while True:
        if isinstance(client_or_em, Emulator):
            job: Any = client_or_em.store.get(name)
            state = str(job.get("state", "JOB_STATE_UNSPECIFIED"))
        else:
            getter = client_or_em.get_hyperparameter_tuning_job if is_tuning else client_or_em.get_custom_job
            job = getter(name=name)
            state = _state_name(job.state)
        if state in wanted:
            return job
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{name} is still {state} after {timeout:g}s (waiting for {sorted(wanted)})")
        time.sleep(interval)
