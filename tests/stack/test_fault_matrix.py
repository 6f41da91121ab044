"""The fault matrix, run in-process with the operators' ``dag.test()`` harness (SQLite metadata DB,
real task runner, real triggers run inline, an in-process emulator with real replica processes):

* 10 / 30 / 50 % of JobService calls failing with UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED
  or INTERNAL (one code per cell), for a deferred and a non-deferred task;
* 0.3 s added to every call;
* 50 % of Creates whose answer is lost after the job was made (the emulator runs the call, then
  answers UNAVAILABLE or DEADLINE_EXCEEDED): the duplicates column counts what a re-sent Create made;
* a worker replica crashing (SIGKILL, exit 137) with and without ``restart_job_on_worker_restart``.

Each cell reports runs, successes, failures carrying the right message, duplicate jobs and orphan
replica processes; the figures go to ``docs/reliability.md``.
"""

from __future__ import annotations

import os
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG
from operators.harness import CONN_ENV, PY, connection_env, logged, migrate_db, poll, run_dag, ti_state

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, Scheduling, WorkerPool
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Faults

from .figures import Figures

pytestmark = pytest.mark.stack

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
PARENT = "projects/test-project/locations/us-central1"
CODES = ("UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "INTERNAL")
RATES = (0.1, 0.3, 0.5)
HOOK_METHODS = ("CreateCustomJob", "GetCustomJob", "ListCustomJobs", "CancelCustomJob")


@pytest.fixture(scope="module", autouse=True)
def airflow_db() -> None:
    migrate_db()


def pool(code: str, count: int = 1) -> WorkerPool:
    return WorkerPool(
        machine=Machine(machine_type="n1-standard-4"),
        replica_count=count,
        container=Container(image_uri="python:3.11", command=(PY, "-c", code)),
    )


def spec(primary: str, *, worker: str | None = None, restart: bool = False) -> DistributedTrainingJob:
    return DistributedTrainingJob(
        display_name="matrix",
        primary=pool(primary),
        workers=pool(worker) if worker else None,
        scheduling=Scheduling(restart_job_on_worker_restart=True) if restart else None,
    )


def replica_pids(em: Emulator) -> list[int]:
    work = str(em.config.state_dir.resolve() / "work")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd").startswith(work):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.fixture
def cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Run a DAG of deferred + non-deferred training tasks against an emulator with ``faults``."""
    ems: list[Emulator] = []

    def run(name: str, faults: Faults, job: DistributedTrainingJob, capfd: Any) -> dict[str, Any]:
        em_cm = testing.running_emulator(tmp_path / name, faults=faults)
        em = em_cm.__enter__()
        ems.append(em)
        try:
            monkeypatch.setenv(CONN_ENV, connection_env(em))
            with DAG(f"matrix_{name}", schedule=None, start_date=START, default_args={"retries": 0}) as dag:
                for deferrable in (True, False):
                    VertexTrainingOperator(
                        task_id=f"train_{'deferred' if deferrable else 'sync'}",
                        spec=job,
                        deferrable=deferrable,
                        poll_interval=0.3,
                    )
            started = time.monotonic()
            dr = run_dag(dag)
            seconds = time.monotonic() - started
            states = {t: ti_state(dr, t) for t in ("train_deferred", "train_sync")}
            jobs = [j for j in em.store.list("customJobs", PARENT) if j.get("labels", {}).get("airflow-task")]
            per_task = Counter(j["labels"]["airflow-task"] for j in jobs)
            poll(lambda: not replica_pids(em), timeout=30, what="no replica left")
            return {
                "states": states,
                "jobs": jobs,
                "log": logged(capfd),
                "figures": {
                    "runs": 2,
                    "succeeded": list(states.values()).count("success"),
                    "failed": list(states.values()).count("failed"),
                    "jobs": len(jobs),
                    "duplicates": sum(n - 1 for n in per_task.values()),
                    "orphans": len(replica_pids(em)),
                    "injected_faults": sum(em.service.injector.injected_counts().values()),
                    "seconds": round(seconds, 1),
                },
            }
        finally:
            em_cm.__exit__(None, None, None)

    yield run


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("code", CODES)
def test_api_fault_cell(cell: Any, capfd: Any, code: str, rate: float) -> None:
    seed = zlib.crc32(f"{code} {rate}".encode())  # a different (fixed) draw sequence per cell
    faults = Faults(error_rate=dict.fromkeys(HOOK_METHODS, rate), error_codes=[code], seed=seed)
    # the jobs run 2 s, so the waits poll a few times and the faults hit more than Create
    out = cell(f"{code.lower()}_{int(rate * 100)}", faults, spec("import time; time.sleep(2)"), capfd)
    figures = out["figures"]
    Figures.record("fault_matrix", f"{code} {int(rate * 100)}%", figures)
    assert out["states"] == {"train_deferred": "success", "train_sync": "success"}
    assert figures["jobs"] == 2 and figures["duplicates"] == 0 and figures["orphans"] == 0
    if rate >= 0.3:
        assert figures["injected_faults"] > 0


@pytest.mark.parametrize("code", ["UNAVAILABLE", "DEADLINE_EXCEEDED"])
def test_lost_create_answer_cell(cell: Any, capfd: Any, code: str) -> None:
    faults = Faults(
        lost_answer_rate={"CreateCustomJob": 0.5}, error_codes=[code], seed=zlib.crc32(code.encode())
    )
    out = cell(f"lost_{code.lower()}", faults, spec("print('ok')"), capfd)
    figures = out["figures"]
    Figures.record("fault_matrix", f"Create answer lost 50% ({code})", figures)
    assert out["states"] == {"train_deferred": "success", "train_sync": "success"}
    assert figures["jobs"] == 2 and figures["duplicates"] == 0 and figures["orphans"] == 0


def test_latency_cell(cell: Any, capfd: Any) -> None:
    out = cell("latency", Faults(latency_s=0.3), spec("print('ok')"), capfd)
    Figures.record("fault_matrix", "latency 0.3 s", out["figures"])
    assert out["states"] == {"train_deferred": "success", "train_sync": "success"}
    assert out["figures"]["duplicates"] == 0 and out["figures"]["orphans"] == 0


@pytest.mark.parametrize("restart", [False, True])
def test_replica_crash_cell(cell: Any, capfd: Any, restart: bool) -> None:
    faults = Faults(crash_replicas=["workerpool1-0"], crash_after_s=0.5, crash_exit_code=137)
    job = spec("import time; time.sleep(4)", worker="import time; time.sleep(60)", restart=restart)
    out = cell(f"crash_restart_{restart}", faults, job, capfd)
    figures = out["figures"]
    if restart:
        figures["failed_with_message"] = 0
        Figures.record("fault_matrix", "worker crash, restart_job_on_worker_restart", figures)
        assert out["states"] == {"train_deferred": "success", "train_sync": "success"}
    else:
        errors = [j["error"]["message"] for j in out["jobs"]]
        figures["failed_with_message"] = sum(
            1 for m in errors if "workerpool1-0" in m and "137" in m and m.splitlines()[0] in out["log"]
        )
        Figures.record("fault_matrix", "worker crash, no restart", figures)
        assert out["states"] == {"train_deferred": "failed", "train_sync": "failed"}
        assert figures["failed_with_message"] == 2, (errors, out["log"][-3000:])
    assert figures["jobs"] == 2 and figures["duplicates"] == 0 and figures["orphans"] == 0
