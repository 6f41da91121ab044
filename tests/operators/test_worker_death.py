"""The worker running a try dies (SIGKILL) after the job was created; the next try re-attaches.

Try 1 runs in a child process (``dag.test()`` on the same metadata DB, against this test's emulator)
and is killed while it polls the running job; try 2 runs here, on the same DAG run. The emulator must
hold exactly one job: the one try 1 created, which try 2 waited for.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from vertex_emulator.app import Emulator

from .harness import dag_xcom, logged, poll, run_dag, ti_state
from .test_training import PARENT

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

DAG_FILE = textwrap.dedent(
    """
    import sys
    from datetime import datetime, timezone

    from airflow.sdk import DAG

    from airflow_vertex_dist.operators.training import VertexTrainingOperator
    from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

    FLAG = {flag!r}
    CODE = "import pathlib, time\\nwhile not pathlib.Path(FLAG).exists(): time.sleep(0.05)".replace(
        "FLAG", repr(FLAG)
    )
    with DAG("worker_death", schedule=None, start_date=datetime(2024, 1, 1, tzinfo=timezone.utc)) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=DistributedTrainingJob(
                display_name="survivor",
                primary=WorkerPool(
                    machine=Machine(machine_type="n1-standard-4"),
                    container=Container(image_uri="python:3.11", command=(sys.executable, "-c", CODE)),
                ),
            ),
            deferrable=False,
            poll_interval=0.5,
        )
    """
)

CHILD = textwrap.dedent(
    """
    import runpy, sys
    from datetime import datetime
    sys.path.insert(0, sys.argv[3])
    from operators.harness import run_dag
    dag = runpy.run_path(sys.argv[1])["dag"]
    run_dag(dag, logical_date=datetime.fromisoformat(sys.argv[2]))
    """
)


def test_a_try_killed_with_its_worker_is_followed_by_one_that_reattaches(
    vertex_conn: Emulator, tmp_path: Path, capfd: Any
) -> None:
    import runpy

    flag = tmp_path / "finish"
    dag_file = tmp_path / "worker_death.py"
    dag_file.write_text(DAG_FILE.format(flag=str(flag)))
    when = datetime(2024, 6, 1, tzinfo=timezone.utc)
    tests_dir = str(Path(__file__).resolve().parents[1])
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(dag_file), when.isoformat(), tests_dir],
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        job = poll(
            lambda: next(
                (
                    j
                    for j in vertex_conn.store.list("customJobs", PARENT)
                    if j["state"] == "JOB_STATE_RUNNING"
                ),
                None,
            ),
            timeout=240,
            interval=0.2,
            what="try 1 created the job and it runs",
        )
        assert child.poll() is None, "try 1 ended by itself"
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the worker dies: no on_kill, no cancel
        child.wait(timeout=30)
    assert vertex_conn.store.get(job["name"])["state"] == "JOB_STATE_RUNNING"
    flag.write_text("go")

    dag = runpy.run_path(str(dag_file))["dag"]
    dr = run_dag(dag, logical_date=when)
    assert ti_state(dr, "train") == "success"
    assert [j["name"] for j in vertex_conn.store.list("customJobs", PARENT)] == [job["name"]]
    assert dag_xcom(dr, "train")["name"] == job["name"]
    # dag.test() clears the task instance first, as a user's clear does: the task state is gone
    # then, and the run labels find the job.
    assert re.search(
        rf"Re-attaching to {job['name']} \(\w+\), (found by its run labels|named in the task state)",
        logged(capfd),
    )
