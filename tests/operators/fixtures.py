"""The fixtures the operator and sensor tests share (their conftests import them): a migrated
metadata DB, an emulator per test, and the default connection pointing at it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from vertex_emulator import testing
from vertex_emulator.app import Emulator

from .harness import CONN_ENV, connection_env, migrate_db

__all__ = ["airflow_db", "emulator", "supervisor_channel", "vertex_conn"]


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


@pytest.fixture
def supervisor_channel(airflow_db: None) -> Iterator[None]:
    """The Task SDK's channel to a supervisor, as a trigger has it: Airflow's in-process supervisor
    (the one ``dag.test()`` runs triggers with, sync calls only), built as Airflow's
    ``InProcessTestSupervisor.run_trigger_in_process`` builds it, against the migrated metadata DB."""
    import psutil
    import structlog
    from airflow.sdk.execution_time.supervisor import (
        InProcessSupervisorComms,
        InProcessTestSupervisor,
        set_supervisor_comms,
    )
    from uuid6 import uuid7

    supervisor = InProcessTestSupervisor(
        id=uuid7(),
        pid=os.getpid(),
        process=psutil.Process(),
        process_log=structlog.get_logger(logger_name="task").bind(),
        client=InProcessTestSupervisor._api_client(),
    )
    supervisor.comms = InProcessSupervisorComms(supervisor=supervisor)
    with set_supervisor_comms(supervisor.comms):
        yield
