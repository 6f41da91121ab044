"""The capacity ladder run for real (dag.test(), the emulator, real replica processes).

Today's emulator has no capacity model of its own, so each capacity failure is produced the way the
emulator can: quota through its fault API (``error_rate`` with RESOURCE_EXHAUSTED on CreateCustomJob,
seeded), a stockout that shows as a job left PENDING through ``pending_s`` and a rung's
``pending_limit``, and a Spot preemption by writing the service's failure into a running job, as the
other operator tests write states the emulator does not reach by itself. Every test watches the
emulator's store from a thread: at no moment does the task have more than one unfinished job. A ladder
resumed (from a checkpoint after a preemption, by a try after one that died) is
``test_capacity_resume.py``'s, with the helpers here.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import (
    CapacityLadder,
    Container,
    DistributedTrainingJob,
    Machine,
    MachineOverride,
    Rung,
    WorkerPool,
)
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Faults

from .harness import CONN_ENV, PY, connection_env, dag_xcom, logged, poll, run_dag, ti_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
A100 = Machine(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)
L4 = MachineOverride(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)
FAST_RETRY = RetryPolicy(initial_s=0.05, maximum_s=0.5, multiplier=2.0, deadline_s=30.0, rpc_timeout_s=30.0)


class FastRetryHook(VertexJobsHook):
    def __init__(self, conn_id: str, **kwargs: Any) -> None:
        kwargs.setdefault("retry_policy", FAST_RETRY)
        super().__init__(conn_id, **kwargs)


class Training(VertexTrainingOperator):
    hook_class = FastRetryHook


def spec(code: str, **extra: Any) -> DistributedTrainingJob:
    return DistributedTrainingJob(
        display_name="ladder",
        primary=WorkerPool(
            machine=A100, container=Container(image_uri="python:3.11", command=(PY, "-c", code))
        ),
        **extra,
    )


def task_jobs(em: Emulator, location: str = "us-central1") -> list[dict[str, Any]]:
    parent = f"projects/test-project/locations/{location}"
    jobs = [j for j in em.store.list("customJobs", parent) if (j.get("labels") or {}).get("airflow-task")]
    return sorted(jobs, key=lambda j: j["createTime"])


@contextmanager
def live_jobs_watch(em: Emulator, locations: tuple[str, ...] = ("us-central1",)) -> Iterator[list[int]]:
    """The most unfinished task jobs the store held at any one look (every few ms while the block runs)."""
    most = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            live = sum(
                1 for loc in locations for j in task_jobs(em, loc) if j["state"] not in TERMINAL_STATES
            )
            most[0] = max(most[0], live)
            time.sleep(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield most
    finally:
        stop.set()
        thread.join(timeout=10)


def _seed_failing_first_draw_only(rate: float) -> int:
    """A seed whose first draw fails a call at ``rate`` and whose second passes (core/faults.py draws)."""
    for seed in range(10_000):
        rng = random.Random(seed)
        if rng.random() < rate <= rng.random():
            return seed
    raise AssertionError("no seed")  # pragma: no cover


@pytest.fixture
def quota_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """The first CreateCustomJob answers RESOURCE_EXHAUSTED (the fault API), the next one goes through."""
    faults = Faults(
        error_rate={"CreateCustomJob": 0.5},
        error_codes=["RESOURCE_EXHAUSTED"],
        seed=_seed_failing_first_draw_only(0.5),
    )
    with testing.running_emulator(tmp_path, faults=faults) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        yield em


def test_quota_at_create_moves_to_the_next_rung(quota_once: Emulator, capfd: Any) -> None:
    ladder = CapacityLadder(rungs=(Rung(name="a100"), Rung(name="l4", machine=L4)))
    with DAG("ladder_quota", schedule=None, start_date=START) as dag:
        Training(
            task_id="train", spec=spec("print('ok')"), capacity=ladder, deferrable=False, poll_interval=0.2
        )
    with live_jobs_watch(quota_once) as most:
        dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    [job] = task_jobs(quota_once)  # the refused Create made no job
    assert job["labels"]["airflow-rung"] == "r2"
    assert job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"] == "g2-standard-8"
    assert quota_once.service.injector.injected_counts() == {"CreateCustomJob": 1}
    out = dag_xcom(dr, "train")
    assert out["name"] == job["name"]
    rung = out["rung"]
    assert (rung["number"], rung["of"], rung["name"]) == (2, 2, "l4")
    [left] = rung["left"]
    assert (left["rung"], left["name"], left["job"], left["outcome"]) == (1, "a100", None, "quota")
    assert "RESOURCE_EXHAUSTED" in left["reason"]
    assert out["cost"]["usd_per_hour"] == rung["usd_per_hour"] and out["cost"]["estimated_usd"] is not None
    text = logged(capfd)
    assert "Capacity ladder of 2 rungs" in text and "USD/hour" in text
    assert "Leaving rung 1 (a100) after" in text and "quota" in text
    assert f"Rung 2/2 (l4) runs {job['name']}" in text
    assert most[0] == 1


def test_user_code_fails_fast_without_the_next_rung(vertex_conn: Emulator, capfd: Any) -> None:
    ladder = CapacityLadder(rungs=(Rung(name="a100"), Rung(name="l4", machine=L4)))
    with DAG("ladder_user_code", schedule=None, start_date=START) as dag:
        Training(
            task_id="train",
            spec=spec("import sys; sys.exit(3)"),
            capacity=ladder,
            deferrable=False,
            poll_interval=0.2,
            retries=2,
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"  # not up_for_retry: AirflowFailException
    [job] = task_jobs(vertex_conn)
    assert job["state"] == "JOB_STATE_FAILED" and job["labels"]["airflow-rung"] == "r1"
    text = logged(capfd)
    assert "AirflowFailException: user code on rung 1 (a100): the training code failed" in text
    assert "Not trying other rungs" in text


def test_a_stockout_past_the_pending_limit_moves_on_in_the_triggerer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    """Every job stays PENDING for 4 s: rung 1 gives up after 0.5 s (its job cancelled and ended first),
    rung 2 waits and runs. Deferred: the rung's trigger ends the wait, the resumed task moves on."""
    with testing.running_emulator(tmp_path, faults=Faults(pending_s=4.0)) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        ladder = CapacityLadder(
            rungs=(Rung(name="a100", pending_limit=0.5), Rung(name="l4", machine=L4)),
        )
        with DAG("ladder_pending", schedule=None, start_date=START) as dag:
            Training(
                task_id="train", spec=spec("print('ok')"), capacity=ladder, deferrable=True, poll_interval=0.2
            )
        with live_jobs_watch(em) as most:
            dr = run_dag(dag)
        assert ti_state(dr, "train") == "success"
        first, second = task_jobs(em)
        assert (first["state"], first["labels"]["airflow-rung"]) == ("JOB_STATE_CANCELLED", "r1")
        assert "startTime" not in first
        assert (second["state"], second["labels"]["airflow-rung"]) == ("JOB_STATE_SUCCEEDED", "r2")
        assert second["createTime"] >= first["endTime"]  # rung 2's job only once rung 1's had ended
        [left] = dag_xcom(dr, "train")["rung"]["left"]
        assert (left["outcome"], left["job"]) == ("stockout", first["name"])
        assert "pending_limit of 0.5s" in left["reason"]
        # the walk's state names the rung it last waited on, for the job view's table of rungs tried
        assert dag_xcom(dr, "train", "vertex_ladder")["rung"] == {"number": 2, "name": "l4"}
        assert most[0] == 1
        assert "Deferring: waiting for" in logged(capfd)


def test_an_exhausted_ladder_fails_with_the_table_of_rungs_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    with testing.running_emulator(tmp_path, faults=Faults(pending_s=60.0)) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        ladder = CapacityLadder(
            regions=("us-east1",),
            rungs=(
                Rung(name="a100", pending_limit=0.3),
                Rung(name="l4-east", region="us-east1", machine=L4, pending_limit=0.3),
            ),
        )
        with DAG("ladder_exhausted", schedule=None, start_date=START) as dag:
            Training(
                task_id="train",
                spec=spec("print('ok')"),
                capacity=ladder,
                deferrable=False,
                poll_interval=0.2,
                retries=2,
            )
        with live_jobs_watch(em, ("us-central1", "us-east1")) as most:
            dr = run_dag(dag)
        assert ti_state(dr, "train") == "failed"
        [central] = task_jobs(em)
        [east] = task_jobs(em, "us-east1")
        assert central["state"] == east["state"] == "JOB_STATE_CANCELLED"
        text = logged(capfd)
        assert "AirflowFailException: Capacity ladder exhausted: every one of its 2 rungs was left" in text
        assert "rung  name     region       job" in text
        rows = [
            line
            for line in text.splitlines()
            if line.split()[:2] in (["1", "a100"], ["2", "l4-east"]) and "stockout" in line
        ]
        assert len(rows) == 2, rows
        for row, job, region in zip(rows, (central, east), ("us-central1", "us-east1"), strict=True):
            assert region in row and job["name"].rsplit("/", 1)[1] in row
            assert "stockout: stayed " in row and "pending_limit of 0.3s" in row
        assert most[0] == 1


@pytest.fixture
def tuning_quota_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """The first CreateHyperparameterTuningJob answers RESOURCE_EXHAUSTED, the next one goes through."""
    faults = Faults(
        error_rate={"CreateHyperparameterTuningJob": 0.5},
        error_codes=["RESOURCE_EXHAUSTED"],
        seed=_seed_failing_first_draw_only(0.5),
    )
    with testing.running_emulator(tmp_path, faults=faults) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        yield em


def test_a_tuning_task_climbs_the_ladder_too(tuning_quota_once: Emulator) -> None:
    from airflow_vertex_dist.operators.tuning import VertexTuningOperator

    from .test_tuning import tuning_spec

    class Tuning(VertexTuningOperator):
        hook_class = FastRetryHook

    ladder = CapacityLadder(
        rungs=(Rung(name="n1-4"), Rung(name="n1-8", machine=MachineOverride(machine_type="n1-standard-8")))
    )
    with DAG("ladder_tuning", schedule=None, start_date=START) as dag:
        Tuning(
            task_id="tune",
            spec=tuning_spec(),
            capacity=ladder,
            deferrable=False,
            poll_interval=0.2,
            gpu_pool="default_pool",
        )
    dr = run_dag(dag)
    assert ti_state(dr, "tune") == "success"
    [study] = tuning_quota_once.store.list(
        "hyperparameterTuningJobs", "projects/test-project/locations/us-central1"
    )
    assert study["labels"]["airflow-rung"] == "r2"
    assert study["trialJobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"] == "n1-standard-8"
    out = dag_xcom(dr, "tune")
    assert out["rung"]["number"] == 2 and [s["outcome"] for s in out["rung"]["left"]] == ["quota"]
    assert out["trial_counts"]["total"] == 4 and out["best_trial"] is not None
    assert out["cost"]["hours"] is not None and out["cost"]["hours"] > 0  # the trials' hours, summed


def test_a_job_paused_past_its_grace_fails_the_task_without_the_next_rung(
    vertex_conn: Emulator, capfd: Any
) -> None:
    """Not a capacity failure: the task fails as without a ladder (Airflow's retries apply), the job
    cancelled, no other rung tried."""

    def pause() -> None:
        job = poll(
            lambda: next((j for j in task_jobs(vertex_conn) if j["state"] == "JOB_STATE_RUNNING"), None),
            timeout=60,
            what="a RUNNING job",
        )

        def apply(j: dict[str, Any]) -> None:
            j["state"] = "JOB_STATE_PAUSED"

        vertex_conn.store.update(job["name"], apply)

    thread = threading.Thread(target=pause, daemon=True)
    thread.start()
    ladder = CapacityLadder(rungs=(Rung(name="a100"), Rung(name="l4", machine=L4)))
    with DAG("ladder_paused", schedule=None, start_date=START) as dag:
        Training(
            task_id="train",
            spec=spec("import time; time.sleep(60)"),
            capacity=ladder,
            deferrable=False,
            poll_interval=0.2,
            paused_grace=0.5,
        )
    dr = run_dag(dag)
    thread.join(timeout=30)
    assert ti_state(dr, "train") == "failed"
    [job] = task_jobs(vertex_conn)
    assert job["labels"]["airflow-rung"] == "r1"
    assert job["state"] in ("JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING")
    text = logged(capfd)
    assert "AirflowException: job " in text and "stayed PAUSED" in text
    assert "AirflowFailException" not in text
