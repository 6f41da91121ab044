"""The fixtures the operator and sensor tests share (their conftests import them): a migrated
metadata DB, an emulator per test, and the default connection pointing at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_vertex_dist.emulator import testing
from airflow_vertex_dist.emulator.app import Emulator

from .harness import CONN_ENV, connection_env, migrate_db

__all__ = ["airflow_db", "emulator", "vertex_conn"]


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
