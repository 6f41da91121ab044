"""An emulator per test module, and AIRFLOW_CONN_VERTEX_DIST_DEFAULT pointing at it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_vertex_dist.hooks import poll_loop as _poll_loop
from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.triggers import poller
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults

NO_FAULTS = {"error_rate": {}, "error_codes": ["UNAVAILABLE"], "latency_s": 0.0, "seed": None}


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with testing.running_emulator(Path(tmp_path_factory.mktemp("emulator"))) as em:
        yield em


@pytest.fixture
def em(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """The module's emulator over gRPC, fast retries; fault settings reset after each test."""
    extra = {
        "project": "test-project",
        "location": "us-central1",
        "api_endpoint": emulator.grpc_target,
        "emulator": True,
        "web_endpoint": emulator.rest_endpoint,
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT", json.dumps({"conn_type": "vertex_dist", "extra": extra})
    )
    monkeypatch.setattr(
        poller, "POLLER_RETRY", RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=0.5, rpc_timeout_s=5.0)
    )
    monkeypatch.setattr(_poll_loop, "MAX_BACKOFF_S", 0.2)
    yield emulator
    update_faults(emulator.config.faults, NO_FAULTS)


@pytest.fixture
def rest_conn(em: Emulator, monkeypatch: pytest.MonkeyPatch) -> str:
    extra = {
        "project": "test-project",
        "location": "us-central1",
        "transport": "rest",
        "api_endpoint": em.rest_endpoint,
        "emulator": True,
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT", json.dumps({"conn_type": "vertex_dist", "extra": extra})
    )
    return "rest"
