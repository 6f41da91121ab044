"""Helpers of the GPU capacity tests: GPU job bodies, the admin endpoints over plain HTTP, the stock
clients by transport, and polls with deadlines (never a sleep waiting for a state)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.runtime.log_records import SERVICE_KEY, records_path

__all__ = [
    "A100",
    "admin",
    "answer",
    "client_for",
    "gpu_job",
    "gpu_tuning_job",
    "service_lines",
    "wait_until",
    "wait_for_file_lines",
]

A100 = "NVIDIA_TESLA_A100"
#: a2 machine types by their count of built-in A100s (the emulator's machine rules require them)
_A2 = {1: "a2-highgpu-1g", 2: "a2-highgpu-2g", 4: "a2-highgpu-4g", 8: "a2-highgpu-8g"}


def gpu_job(
    name: str,
    code: str = "pass",
    *,
    gpus: int = 1,
    strategy: str | None = None,
    max_wait: str | None = None,
) -> dict[str, Any]:
    """A v1 CustomJob body: one replica on an a2 machine with ``gpus`` A100s running ``python -c code``."""
    body = testing.container_job(name, code)
    spec = body["jobSpec"]
    spec["workerPoolSpecs"][0]["machineSpec"] = {
        "machineType": _A2[gpus],
        "acceleratorType": A100,
        "acceleratorCount": gpus,
    }
    if strategy is not None:
        spec["scheduling"] = {"strategy": strategy}
        if max_wait is not None:
            spec["scheduling"]["maxWaitDuration"] = max_wait
    return body


def gpu_tuning_job(
    name: str, code: str, *, gpus: int = 1, trials: int = 2, parallel: int = 2
) -> dict[str, Any]:
    """A v1 HyperparameterTuningJob body whose trials each run one replica with ``gpus`` A100s."""
    body = testing.tuning_job(name, code, max_trials=trials, parallel=parallel)
    body["trialJobSpec"] = gpu_job(name, code, gpus=gpus)["jobSpec"]
    return body


def admin(em: Emulator, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """An admin endpoint (``/emulator/...``) over plain HTTP: (status, decoded JSON)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(em.rest_endpoint + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def answer(exc: Any) -> str:
    """An API error's message as the service wrote it (the REST client puts ``METHOD URL: `` before it)."""
    text = str(exc.message)
    return text.split(": ", 1)[1] if text.startswith(("POST http", "GET http")) else text


@contextmanager
def client_for(em: Emulator, transport: str) -> Iterator[Any]:
    """The stock JobServiceClient over ``transport`` ("grpc" or "rest")."""
    client = testing.grpc_client(em) if transport == "grpc" else testing.rest_client(em)
    try:
        yield client
    finally:
        client.transport.close()


def wait_until(what: str, check: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll ``check()`` until it returns something true (returned), or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not seen within {timeout:g}s (last: {value!r})")
        time.sleep(0.02)


def service_lines(em: Emulator, job_name: str) -> list[dict[str, Any]]:
    """The job's ``service`` records (``m``: text, ``sev``, ``labels``), as written so far."""
    path = records_path(Path(em.config.state_dir) / "logs" / job_name.rsplit("/", 1)[-1], SERVICE_KEY)
    try:
        text = path.read_text()
    except OSError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def wait_for_file_lines(path: Path, count: int, timeout: float = 30.0) -> list[str]:
    """The lines of ``path`` once it has at least ``count`` of them."""

    def lines() -> list[str]:
        try:
            found = path.read_text().splitlines()
        except OSError:
            return []
        return found if len(found) >= count else []

    return list(wait_until(f"{count} lines in {path.name}", lines, timeout))
