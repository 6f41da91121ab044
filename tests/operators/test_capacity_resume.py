"""The capacity ladder resumed, for real (dag.test(), the emulator, real replica processes): a trainer
preempted on a Spot rung resumes from its checkpoint on the rung's retry, and a try that died mid-ladder
is followed by one that re-attaches on its rung. As in ``test_capacity.py``, every test watches the
emulator's store from a thread: at no moment does the task have more than one unfinished job.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.jobs.capacity_messages import stockout_message
from airflow_vertex_dist.specs import CapacityLadder, Checkpoints, Container, Rung, WorkerPool
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Faults

from .harness import CONN_ENV, PY, connection_env, dag_xcom, logged, poll, run_dag, ti_state
from .test_capacity import A100, L4, START, Training, live_jobs_watch, spec, task_jobs

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]


PREEMPTIBLE_TRAINER = """
import os, pathlib, sys, time
base = pathlib.Path(os.environ["GCS_ROOT"]) / os.environ["AIP_CHECKPOINT_DIR"][len("gs://"):]
base.mkdir(parents=True, exist_ok=True)
(base.parent / ("env-" + os.environ["CLOUD_ML_JOB_ID"])).write_text(os.environ["AIP_CHECKPOINT_DIR"])
done = sorted(int(p.name.split("-")[1]) for p in base.glob("step-*"))
start = done[-1] + 1 if done else 1
for step in range(start, 7):
    with open(base.parent / "steps.log", "a") as log:
        log.write(f"{step}\\n")
    (base / f"step-{step}").write_text("")
    if step == 3 and not (base.parent / "preempted").exists():
        (base.parent / "at-step-3").write_text("")
        while True:  # the VM is taken back here: the test fails the job as the service would
            time.sleep(0.05)
"""


def test_a_preempted_spot_rung_is_retried_and_resumes_from_its_checkpoint(
    vertex_conn: Emulator, tmp_path: Path
) -> None:
    """Item 6: every rung and retry gets the same AIP_CHECKPOINT_DIR, so a trainer that checkpoints there
    resumes: steps 1-3 on the preempted job, 4-6 on the retry, none twice."""
    gcs = vertex_conn.config.gcs_root
    the_spec = spec(PREEMPTIBLE_TRAINER, base_output_directory="gs://bucket/run", checkpoints=Checkpoints())
    the_spec = the_spec.model_copy(
        update={
            "primary": WorkerPool(
                machine=A100,
                container=Container(
                    image_uri="python:3.11",
                    command=(PY, "-c", PREEMPTIBLE_TRAINER),
                    env={"GCS_ROOT": str(gcs)},
                ),
            )
        }
    )
    ladder = CapacityLadder(
        rungs=(Rung(name="spot", strategy="SPOT", retries=1, retry_backoff=0), Rung(name="l4", machine=L4))
    )
    run_dir = Path(gcs) / "bucket" / "run"

    def preempt() -> None:
        poll(lambda: (run_dir / "at-step-3").exists(), timeout=60, what="the trainer at step 3")
        [job] = task_jobs(vertex_conn)

        def apply(j: dict[str, Any]) -> None:
            j["state"] = "JOB_STATE_FAILED"
            j["endTime"] = j["startTime"]
            j["error"] = {"code": 8, "message": stockout_message("us-central1")}

        (run_dir / "preempted").write_text("")
        vertex_conn.store.update(job["name"], apply)

    thread = threading.Thread(target=preempt, daemon=True)
    thread.start()
    with DAG("ladder_preempt", schedule=None, start_date=START) as dag:
        Training(task_id="train", spec=the_spec, capacity=ladder, deferrable=False, poll_interval=0.2)
    with live_jobs_watch(vertex_conn) as most:
        dr = run_dag(dag)
    thread.join(timeout=30)
    assert ti_state(dr, "train") == "success"
    first, second = task_jobs(vertex_conn)
    assert first["labels"]["airflow-rung"] == second["labels"]["airflow-rung"] == "r1"  # retried, same rung
    assert (run_dir / "steps.log").read_text().split() == ["1", "2", "3", "4", "5", "6"]
    envs = {p.read_text() for p in run_dir.glob("env-*")}
    assert envs == {"gs://bucket/run/checkpoints/"}  # one checkpoint directory for both jobs
    assert len(list(run_dir.glob("env-*"))) == 2
    out = dag_xcom(dr, "train")
    [left] = out["rung"]["left"]
    assert (left["outcome"], left["job"]) == ("preemption", first["name"])
    assert out["rung"]["number"] == 1 and out["name"] == second["name"]
    assert most[0] == 1


LADDER_DAG_FILE = textwrap.dedent(
    """
    import sys
    from datetime import datetime, timezone

    from airflow.sdk import DAG

    from airflow_vertex_dist.operators.training import VertexTrainingOperator
    from airflow_vertex_dist.specs import (
        CapacityLadder, Container, DistributedTrainingJob, Machine, MachineOverride, Rung, WorkerPool,
    )

    FLAG = {flag!r}
    CODE = "import pathlib, time\\nwhile not pathlib.Path(FLAG).exists(): time.sleep(0.05)".replace(
        "FLAG", repr(FLAG)
    )
    A100 = Machine(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)
    L4 = MachineOverride(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)
    with DAG("ladder_death", schedule=None, start_date=datetime(2024, 1, 1, tzinfo=timezone.utc)) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=DistributedTrainingJob(
                display_name="survivor",
                primary=WorkerPool(
                    machine=A100,
                    container=Container(image_uri="python:3.11", command=(sys.executable, "-c", CODE)),
                ),
            ),
            capacity=CapacityLadder(
                rungs=(Rung(name="a100", pending_limit=0.5), Rung(name="l4", machine=L4)),
            ),
            deferrable=False,
            poll_interval=0.3,
            stream_logs=False,
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


def test_a_try_that_dies_mid_ladder_is_followed_by_one_that_reattaches_on_its_rung(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    """Try 1 (a child process) leaves rung 1 (stockout: PENDING past its limit), starts rung 2's job and
    is SIGKILLed while it waits. Try 2 finds rung 2's job by its labels (airflow-rung=r2), re-attaches,
    reads rung 1's stockout back from its cancelled job, and makes no job of its own."""
    import runpy

    # Every job stays PENDING 8 s: far longer than the 0.5 s rung 1 waits, even in a slow child process.
    with testing.running_emulator(tmp_path, faults=Faults(pending_s=8.0)) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        flag = tmp_path / "finish"
        dag_file = tmp_path / "ladder_death.py"
        dag_file.write_text(LADDER_DAG_FILE.format(flag=str(flag)))
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
            running = poll(
                lambda: next((j for j in task_jobs(em) if j["state"] == "JOB_STATE_RUNNING"), None),
                timeout=240,
                interval=0.2,
                what="try 1 reached rung 2 and its job runs",
            )
            assert child.poll() is None, "try 1 ended by itself"
        finally:
            os.killpg(child.pid, signal.SIGKILL)  # the worker dies: no on_kill, no cancel
            child.wait(timeout=30)
        assert running["labels"]["airflow-rung"] == "r2"
        flag.write_text("go")
        dag = runpy.run_path(str(dag_file))["dag"]
        with live_jobs_watch(em) as most:
            dr = run_dag(dag, logical_date=when)
        assert ti_state(dr, "train") == "success"
        first, second = task_jobs(em)  # no third job: try 2 made none
        assert (first["state"], first["labels"]["airflow-rung"]) == ("JOB_STATE_CANCELLED", "r1")
        assert (second["name"], second["state"]) == (running["name"], "JOB_STATE_SUCCEEDED")
        out = dag_xcom(dr, "train")
        assert out["name"] == running["name"] and out["rung"]["number"] == 2
        [left] = out["rung"]["left"]
        assert (left["rung"], left["job"], left["outcome"]) == (1, first["name"], "stockout")
        text = logged(capfd)
        assert re.search(rf"Re-attaching to {running['name']} \(\w+\) on rung 2", text)
        assert most[0] == 1
