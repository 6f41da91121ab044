"""VertexTrainingOperator run for real: dag.test(), the emulator, real replica processes. The job
cancelled by a timeout or a kill is ``test_training_kill.py``'s, with the helpers here."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.hooks.labels import run_labels
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool
from vertex_emulator.app import Emulator

from .harness import PY, dag_xcom, logged, poll, run_dag, ti_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
PARENT = "projects/test-project/locations/us-central1"


def pool(code: str, count: int = 1) -> WorkerPool:
    return WorkerPool(
        machine=Machine(machine_type="n1-standard-4"),
        replica_count=count,
        container=Container(image_uri="python:3.11", command=(PY, "-c", code)),
    )


def spec(code: str, *, workers: int = 0, name: str = "train", **extra: Any) -> DistributedTrainingJob:
    return DistributedTrainingJob(
        display_name=name,
        primary=pool(code),
        workers=pool(code, workers) if workers else None,
        **extra,
    )


def jobs(em: Emulator, kind: str = "customJobs") -> list[dict[str, Any]]:
    return em.store.list(kind, PARENT)


def pid_code(pid_dir: Path, then: str = "time.sleep(120)") -> str:
    """Replica code that records its pid (one file per replica) and then runs ``then``."""
    return (
        f"import os, time, pathlib; d = pathlib.Path({str(pid_dir)!r}); d.mkdir(exist_ok=True); "
        f"(d / str(os.getpid())).write_text(''); {then}"
    )


def pids(pid_dir: Path) -> list[int]:
    return [int(p.name) for p in pid_dir.iterdir()] if pid_dir.exists() else []


@pytest.fixture
def set_state_when(vertex_conn: Emulator) -> Iterator[Any]:
    """Write a state into the emulator's store once the job reaches RUNNING (from a thread)."""
    threads: list[threading.Thread] = []

    def start(state: str, **fields: Any) -> None:
        def work() -> None:
            job = poll(
                lambda: next((j for j in jobs(vertex_conn) if j["state"] == "JOB_STATE_RUNNING"), None),
                what="a RUNNING job",
            )

            def apply(j: dict[str, Any]) -> None:
                j["state"] = state
                j.update(fields)

            vertex_conn.store.update(job["name"], apply)

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        threads.append(thread)

    yield start
    for thread in threads:
        thread.join(timeout=30)


# ---------------------------------------------------------------------------------------- runs


def test_non_deferred_run_renders_the_spec_and_pushes_outputs(vertex_conn: Emulator) -> None:
    the_spec = spec("print('hello')", workers=2, enable_web_access=True)
    raw = the_spec.model_dump(mode="json", exclude_unset=True)
    raw["display_name"] = "train-{{ dag_run.conf.get('tag', 'x') }}-{{ ds_nodash }}"
    raw["primary"]["container"]["args"] = ["--day={{ ds }}"]
    with DAG("train_sync", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=raw, deferrable=False, poll_interval=0.5)
    when = datetime(2024, 3, 4, tzinfo=timezone.utc)
    dr = run_dag(dag, logical_date=when)
    assert ti_state(dr, "train") == "success"
    [job] = jobs(vertex_conn)
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    assert job["displayName"] == "train-x-20240304"
    assert job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] == ["--day=2024-03-04"]
    assert len(job["jobSpec"]["workerPoolSpecs"]) == 2
    assert {k: job["labels"][k] for k in run_labels("train_sync", "train", dr.run_id)} == run_labels(
        "train_sync", "train", dr.run_id
    )
    out = dag_xcom(dr, "train")
    assert out == {
        "name": job["name"],
        "id": job["name"].rsplit("/", 1)[1],
        "kind": "customJobs",
        "display_name": "train-x-20240304",
        "state": "JOB_STATE_SUCCEEDED",
        "create_time": job["createTime"],
        "start_time": job.get("startTime"),
        "end_time": job["endTime"],
        "console_url": f"{vertex_conn.rest_endpoint}/ui/{job['name']}",
        "error": None,
        "rung": None,  # no capacity ladder
        "cost": out["cost"],
        "ledger": out["ledger"],
    }
    # 3 replicas of n1-standard-4 (us-central1, on-demand: the machine catalog), for the hours it ran
    assert out["cost"]["usd_per_hour"] == pytest.approx(3 * 0.21849885)
    assert out["cost"]["basis"] == "on-demand"
    cost = out["cost"]
    assert cost["hours"] > 0
    assert cost["estimated_usd"] == pytest.approx(cost["usd_per_hour"] * cost["hours"], abs=1e-8)
    # the ledger: its one job, 3 CPU replicas (no GPU-hours), the same price times the same hours
    [entry] = out["ledger"]["jobs"]
    assert (entry["job"], entry["rung"], entry["replicas"], entry["gpu_hours"]) == (job["name"], None, 3, 0.0)
    assert entry["usd"] == pytest.approx(cost["estimated_usd"], abs=1e-6)
    assert out["ledger"]["totals"]["usd"] == entry["usd"]
    assert dag_xcom(dr, "train", "vertex_job") == {"name": job["name"], "console_url": out["console_url"]}
    assert dag_xcom(dr, "train", "_link_VertexJobLink") == out["console_url"]


def test_a_failing_replica_fails_the_task(vertex_conn: Emulator, capfd: Any) -> None:
    with DAG("train_fail", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train", spec=spec("import sys; sys.exit(3)"), deferrable=False, poll_interval=0.5
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"
    [job] = jobs(vertex_conn)
    assert job["state"] == "JOB_STATE_FAILED"
    assert dag_xcom(dr, "train") is None
    assert f"AirflowException: job {job['name']} failed: The replica workerpool0-0 exited" in logged(capfd)


def test_wait_false_submits_and_returns(vertex_conn: Emulator, tmp_path: Path) -> None:
    with DAG("train_nowait", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train", spec=spec(pid_code(tmp_path / "pids")), wait_for_completion=False
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    [job] = jobs(vertex_conn)
    out = dag_xcom(dr, "train")
    assert out["name"] == job["name"]
    assert out["state"] in ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING")
    assert job["state"] not in ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED")


def precreate(dag_id: str, when: datetime, code: str, *, budget: str | None = "m0") -> dict[str, Any]:
    """The job an earlier try of ``dag_id``'s task ``train`` (spec ``spec(code)``) made in the manual
    run at ``when``: the run labels, the spec's fingerprint and the retry budget ``budget`` (``m0``:
    the budget of a first try with ``retries=0``, as ``dag.test()`` runs it)."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.types import DagRunType

    run_id = DagRun.generate_run_id(run_type=DagRunType.MANUAL, logical_date=when, run_after=when)
    body = spec(code).to_api(location="us-central1")
    job, created = VertexJobsHook().find_or_create(
        "customJobs", body, labels=run_labels(dag_id, "train", run_id), retry_budget=budget
    )
    assert created
    return job


def unless(flag: Path) -> str:
    """Replica code that sleeps 60 s (having written ``<flag>.waiting``) unless ``flag`` exists when it
    starts: a job made before the flag was written runs on; the same spec started after it succeeds."""
    return (
        f"import pathlib, time\nflag = pathlib.Path({str(flag)!r})\nif not flag.exists():\n"
        "    flag.with_suffix('.waiting').write_text('')\n    time.sleep(60)"
    )


def go(flag: Path) -> None:
    """Once a job of ``unless(flag)`` waits, let every later one succeed at once."""
    poll(flag.with_suffix(".waiting").exists, timeout=60, what="the earlier job's replica waits")
    flag.write_text("")


def test_an_existing_job_of_the_run_is_found_by_its_labels(vertex_conn: Emulator, capfd: Any) -> None:
    """No task state to go by (as on Airflow < 3.3): the run labels alone find the job again."""
    when = datetime(2024, 5, 6, tzinfo=timezone.utc)
    earlier = precreate("train_labels", when, "pass")
    poll(
        lambda: vertex_conn.store.get(earlier["name"])["state"] == "JOB_STATE_SUCCEEDED",
        what="first job done",
    )
    with DAG("train_labels", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=spec("pass"), deferrable=False, poll_interval=0.5)
    dr = run_dag(dag, logical_date=when)
    assert ti_state(dr, "train") == "success"
    assert [j["name"] for j in jobs(vertex_conn)] == [earlier["name"]]
    assert dag_xcom(dr, "train")["name"] == earlier["name"]
    assert f"Re-attaching to {earlier['name']} (SUCCEEDED), found by its run labels" in logged(capfd)


def test_if_exists_fail_refuses_a_second_job(vertex_conn: Emulator, capfd: Any) -> None:
    when = datetime(2024, 5, 7, tzinfo=timezone.utc)
    code = "import time; time.sleep(30)"
    earlier = precreate("train_exists", when, code)
    with DAG("train_exists", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=spec(code), if_exists="fail", deferrable=False)
    dr = run_dag(dag, logical_date=when)
    assert ti_state(dr, "train") == "failed"
    assert [j["name"] for j in jobs(vertex_conn)] == [earlier["name"]]
    assert f"if_exists='fail': job {earlier['name']} for these labels already exists" in logged(capfd)
    VertexJobsHook().cancel_job(earlier["name"])


def test_if_exists_recreate_cancels_the_old_job(vertex_conn: Emulator, tmp_path: Path) -> None:
    when = datetime(2024, 5, 8, tzinfo=timezone.utc)
    code = unless(tmp_path / "go")
    earlier = precreate("train_recreate", when, code)
    go(tmp_path / "go")
    with DAG("train_recreate", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train", spec=spec(code), if_exists="recreate", deferrable=False, poll_interval=0.3
        )
    dr = run_dag(dag, logical_date=when)
    assert ti_state(dr, "train") == "success"
    out = dag_xcom(dr, "train")
    assert out["name"] != earlier["name"] and out["state"] == "JOB_STATE_SUCCEEDED"
    poll(
        lambda: vertex_conn.store.get(earlier["name"])["state"] == "JOB_STATE_CANCELLED", what="old cancelled"
    )
    assert len(jobs(vertex_conn)) == 2


def test_a_retry_after_the_first_try_died_reattaches(
    vertex_conn: Emulator, tmp_path: Path, capfd: Any
) -> None:
    """Try 1 creates the job and dies (execution_timeout, cancel_on_kill=False leaves the job alone);
    try 2 re-attaches to it: the emulator holds exactly one job."""
    flag = tmp_path / "go"
    code = f"import pathlib, time\nwhile not pathlib.Path({str(flag)!r}).exists(): time.sleep(0.05)"
    with DAG("train_retry", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=spec(code),
            deferrable=False,
            poll_interval=0.5,
            cancel_on_kill=False,
            execution_timeout=timedelta(seconds=4),
            retries=1,
            retry_delay=timedelta(0),
            on_retry_callback=lambda context: flag.write_text("go"),
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    [job] = jobs(vertex_conn)
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    assert flag.exists()  # the first try did die
    assert dag_xcom(dr, "train")["name"] == job["name"]
    assert re.search(
        rf"Re-attaching to {job['name']} \((RUNNING|SUCCEEDED)\), named in the task state", logged(capfd)
    )


@pytest.mark.parametrize(
    ("state", "kwargs", "task_state"),
    [
        ("JOB_STATE_EXPIRED", {}, "failed"),
        ("JOB_STATE_PAUSED", {"paused_grace": 1.0}, "failed"),
        ("JOB_STATE_PARTIALLY_SUCCEEDED", {}, "failed"),
        ("JOB_STATE_PARTIALLY_SUCCEEDED", {"partial_success": "succeed"}, "success"),
    ],
)
def test_other_terminal_states_end_the_task_as_specified(
    vertex_conn: Emulator,
    set_state_when: Any,
    tmp_path: Path,
    capfd: Any,
    state: str,
    kwargs: dict[str, Any],
    task_state: str,
) -> None:
    set_state_when(state)
    with DAG("train_states", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=spec(pid_code(tmp_path / "pids")),
            deferrable=False,
            poll_interval=0.5,
            **kwargs,
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == task_state
    [job] = jobs(vertex_conn)
    # A job paused past its grace is cancelled (cancel_on_kill): billed for nothing, never re-attached.
    assert job["state"] == ("JOB_STATE_CANCELLED" if state == "JOB_STATE_PAUSED" else state)
    expected = {
        "JOB_STATE_EXPIRED": f"AirflowException: job {job['name']} expired before it could run",
        # how long it stayed is the poll's reading (1 s or more on a busy machine), the grace is given
        "JOB_STATE_PAUSED": f"AirflowException: job {job['name']} stayed PAUSED for <n>s (grace 1s); "
        "the job was cancelled",
        "JOB_STATE_PARTIALLY_SUCCEEDED": f"job {job['name']} PARTIALLY_SUCCEEDED ("
        + (
            "accepted: partial_success='succeed')"
            if task_state == "success"
            else "a failure: partial_success='fail')"
        ),
    }[state]
    pattern = re.escape(expected).replace("<n>", "[1-9][0-9]*")
    assert re.search(pattern, logged(capfd)), expected


# ---------------------------------------------------------------------------------------- deferred


def test_deferred_run_goes_through_the_trigger(vertex_conn: Emulator) -> None:
    with DAG("train_deferred", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=spec("import time; time.sleep(1)", workers=1),
            deferrable=True,
            poll_interval=0.3,
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    [job] = jobs(vertex_conn)
    out = dag_xcom(dr, "train")
    assert out["name"] == job["name"] and out["state"] == "JOB_STATE_SUCCEEDED"
    assert out["end_time"] == job["endTime"]
    assert out["console_url"] == f"{vertex_conn.rest_endpoint}/ui/{job['name']}"
    assert dag_xcom(dr, "train", "_link_VertexJobLink") == out["console_url"]


def test_deferred_failure_fails_the_task(vertex_conn: Emulator) -> None:
    with DAG("train_deferred_fail", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train", spec=spec("import sys; sys.exit(4)"), deferrable=True, poll_interval=0.3
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"
    [job] = jobs(vertex_conn)
    assert job["state"] == "JOB_STATE_FAILED"
