"""Replica lines reach the task log at the level of their Cloud Logging severity, written once.

On the emulator, as on Vertex AI, a replica's stdout lines are INFO entries and its stderr lines
ERROR entries; the task log (what ``dag.test()`` prints) must show them as INFO and ERROR records,
from the worker's wait and from the triggerer's, and a failed job's error must not quote lines the
stream already wrote.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool
from vertex_emulator.app import Emulator

from .harness import PY, dag_xcom, logged, run_dag, ti_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)

CODE = """
import sys
print("plain progress line", flush=True)
print("Traceback-like failure line", file=sys.stderr, flush=True)
sys.exit(3)
"""


def _spec() -> DistributedTrainingJob:
    return DistributedTrainingJob(
        display_name="levels",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(image_uri="python:3.11", command=(PY, "-c", CODE)),
        ),
    )


def _level_of(out: str, text: str) -> str:
    """The level word of the one task-log record that carries ``text``."""
    lines = [line for line in out.splitlines() if text in line]
    assert len(lines) == 1, f"{text!r} is in {len(lines)} lines of the task log:\n" + "\n".join(lines)
    match = re.search(r"\[(debug|info|warning|error|critical)\s*\]", lines[0])
    assert match, lines[0]
    return (match.group(1) or match.group(2)).upper()


@pytest.mark.parametrize("deferrable", [False, True])
def test_replica_lines_keep_their_severity_and_are_written_once(
    vertex_conn: Emulator, capfd: Any, deferrable: bool
) -> None:
    with DAG(f"levels_{deferrable}", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train", spec=_spec(), deferrable=deferrable, poll_interval=0.3, stream_logs="all"
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"
    out = logged(capfd)
    assert _level_of(out, "[workerpool0-0] plain progress line") == "INFO"
    assert _level_of(out, "[workerpool0-0] Traceback-like failure line") == "ERROR"
    # the failure's explanation does not quote the streamed lines a second time
    assert "Last lines of workerpool0-0 (Cloud Logging):" not in out
    assert "The last lines of workerpool0-0 are the replica lines above in this log." in out


def test_a_deferring_task_seeds_its_streams_cursor(vertex_conn: Emulator) -> None:
    """The XCom the trigger's stream reads at its first start exists before it starts (no
    ``XCom not found`` ERROR in the triggerer: tests/operators/test_log_cursor_xcom.py)."""
    from airflow_vertex_dist.logs.cursor import CURSOR_XCOM_KEY

    code = "print('one line', flush=True)"
    spec = DistributedTrainingJob(
        display_name="first-start",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(image_uri="python:3.11", command=(PY, "-c", code)),
        ),
    )
    with DAG("first_start_seeded", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=spec, deferrable=True, poll_interval=0.3)
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    # dag.test() runs the trigger without a supervisor channel: the seed is left as the task pushed it
    assert dag_xcom(dr, "train", key=CURSOR_XCOM_KEY) == {"timestamp": "", "insert_id": ""}
