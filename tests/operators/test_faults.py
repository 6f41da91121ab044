"""30 % of every JobService call fails with UNAVAILABLE or RESOURCE_EXHAUSTED: the tasks still succeed,
and each makes exactly one job (a retried Create never doubles it)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.operators.tuning import VertexTuningOperator
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Faults

from .harness import CONN_ENV, connection_env, dag_xcom, run_dag, ti_state
from .test_training import PARENT, spec
from .test_tuning import tuning_spec

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)


FAST_RETRY = RetryPolicy(initial_s=0.05, maximum_s=0.5, multiplier=2.0, deadline_s=60.0, rpc_timeout_s=30.0)


class FastRetryHook(VertexJobsHook):
    """The hook with a shorter first backoff (1 s by default), to keep the test short."""

    def __init__(self, conn_id: str, **kwargs: Any) -> None:
        super().__init__(conn_id, retry_policy=FAST_RETRY, **kwargs)


class Training(VertexTrainingOperator):
    hook_class = FastRetryHook


class Tuning(VertexTuningOperator):
    hook_class = FastRetryHook


@pytest.fixture
def faulty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    faults = Faults(error_rate={"*": 0.3}, error_codes=["UNAVAILABLE", "RESOURCE_EXHAUSTED"], seed=20261130)
    with testing.running_emulator(tmp_path, faults=faults) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        yield em


@pytest.mark.parametrize("deferrable", [False, True])
def test_training_and_tuning_succeed_through_transient_errors(faulty: Emulator, deferrable: bool) -> None:
    with DAG(f"faults_{deferrable}", schedule=None, start_date=START) as dag:
        train = Training(
            task_id="train", spec=spec("print('ok')", workers=1), deferrable=deferrable, poll_interval=0.3
        )
        tune = Tuning(task_id="tune", spec=tuning_spec(), deferrable=deferrable, poll_interval=0.3)
        train >> tune
    dr = run_dag(dag)
    assert (ti_state(dr, "train"), ti_state(dr, "tune")) == ("success", "success")
    # The trials' own CustomJobs are in the store too: count the jobs the tasks made, by their labels.
    [job] = [j for j in faulty.store.list("customJobs", PARENT) if j.get("labels", {}).get("airflow-task")]
    [study] = faulty.store.list("hyperparameterTuningJobs", PARENT)
    assert dag_xcom(dr, "train")["name"] == job["name"]
    assert dag_xcom(dr, "tune")["name"] == study["name"]
    assert dag_xcom(dr, "tune")["best_trial"]["parameters"] == {"x": 3}
    injected = faulty.service.injector.injected_counts()
    assert sum(injected.values()) >= 3, injected  # the faults did hit the tasks' calls
