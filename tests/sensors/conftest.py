"""Fixtures of the sensor tests: metadata DB, an emulator, the connection pointing at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from operators.harness import CONN_ENV, connection_env, migrate_db

from airflow_vertex_dist.emulator import testing
from airflow_vertex_dist.emulator.app import Emulator


@pytest.fixture(scope="session")
def airflow_db() -> None:
    migrate_db()


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    with testing.running_emulator(tmp_path) as em:
        yield em


@pytest.fixture
def vertex_conn(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Emulator:
    """The default ``vertex_dist`` connection points at ``emulator`` (gRPC)."""
    monkeypatch.setenv(CONN_ENV, connection_env(emulator))
    return emulator
