"""An emulator per test module, the vertex_dist connection (env var) pointing at it, and ``queued``
(new jobs stay QUEUED until the test ends)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults

NO_FAULTS = {"error_rate": {}, "error_codes": ["UNAVAILABLE"], "latency_s": 0.0, "seed": None}


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with testing.running_emulator(Path(tmp_path_factory.mktemp("emulator"))) as em:
        yield em


@pytest.fixture
def em(emulator: Emulator) -> Iterator[Emulator]:
    """The module's emulator, its fault settings reset after each test."""
    yield emulator
    update_faults(emulator.config.faults, NO_FAULTS)


@pytest.fixture
def queued(em: Emulator) -> Iterator[Callable[[], None]]:
    """Call it to make new jobs stay QUEUED (live, no replica process started) until the test ends."""
    yield lambda: update_faults(em.config.faults, {"queued_s": 300.0})
    update_faults(em.config.faults, {"queued_s": 0.0})


def _set_connection(monkeypatch: pytest.MonkeyPatch, em: Emulator, transport: str) -> None:
    extra = {
        "project": "test-project",
        "location": "us-central1",
        "transport": transport,
        "api_endpoint": em.grpc_target if transport == "grpc" else em.rest_endpoint,
        "emulator": True,
        "web_endpoint": em.rest_endpoint,
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT", json.dumps({"conn_type": "vertex_dist", "extra": extra})
    )


@pytest.fixture(params=["grpc", "rest"])
def transport(request: pytest.FixtureRequest, em: Emulator, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs the test over both transports, with AIRFLOW_CONN_VERTEX_DIST_DEFAULT set accordingly."""
    _set_connection(monkeypatch, em, str(request.param))
    return str(request.param)


@pytest.fixture
def grpc_conn(em: Emulator, monkeypatch: pytest.MonkeyPatch) -> str:
    """AIRFLOW_CONN_VERTEX_DIST_DEFAULT pointing at the emulator over gRPC."""
    _set_connection(monkeypatch, em, "grpc")
    return "grpc"
