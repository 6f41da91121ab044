"""A task whose emulator connection points at a port where nothing listens fails within seconds, its log
naming the connection, the address and the command that starts the emulator there (dag.test(), a real
closed port on loopback; the time bound is a hang guard, far below the retry deadline of 300 s)."""

from __future__ import annotations

import json
import socket
import time
from datetime import datetime, timezone

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

from .harness import PY, logged, run_dag, ti_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
HANG_GUARD_S = 120.0


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_task_on_an_emulator_that_is_not_running_fails_and_says_how_to_start_it(
    transport: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    address = f"127.0.0.1:{port}" if transport == "grpc" else f"http://127.0.0.1:{port}"
    extra = {
        "project": "test-project",
        "location": "us-central1",
        "transport": transport,
        "api_endpoint": address,
        "emulator": True,
    }
    monkeypatch.setenv("AIRFLOW_CONN_LAPTOP_EMU", json.dumps({"conn_type": "vertex_dist", "extra": extra}))
    spec = DistributedTrainingJob(
        display_name="no-emulator",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(image_uri="python:3.11", command=(PY, "-c", "print('ok')")),
        ),
    )
    with DAG(f"no_emulator_{transport}", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=spec, vertex_dist_conn_id="laptop_emu")
    started = time.monotonic()
    dr = run_dag(dag)
    assert time.monotonic() - started < HANG_GUARD_S
    logs = logged(capfd)
    assert ti_state(dr, "train") == "failed", logs
    flag = "--grpc-port" if transport == "grpc" else "--rest-port"
    assert "EmulatorNotRunningError" in logs
    assert f"connection 'laptop_emu': nothing listens at {address} (connection refused)" in logs
    assert f"the emulator is not running there; start it with `vertex-emulator {flag} {port}`" in logs
    assert f"Vertex AI call on connection 'laptop_emu': attempt 1 refused at {address}" in logs
    # the log ends in the one clear error, not after the refused attempts' chained tracebacks
    assert "direct cause of the following exception" not in logs
    assert "During handling of the above exception" not in logs
