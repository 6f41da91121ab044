"""Which tries skip find-or-create's look-up before the Create (``first_try``): only a task instance's
first try (``try_number == 1``; ``attach_or_create`` runs in ``execute``, never in a resumed deferral)
in a run whose id Airflow made once (scheduled, backfill, asset): not in a manual run, which
``dag.test()`` deletes and makes again with the same id on every call.

A retry looks up first and re-attaches with no Create, also where no task state names the job (Airflow
< 3.3, or a try that died between its Create and recording the job): the contexts here have no
``task_state_store``. JobService calls are counted at the emulator.
"""

from __future__ import annotations

import types
from typing import Any

import pytest
from airflow.sdk.api.datamodels._generated import DagRunType

from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults

from .test_training import spec

RUN_ID = "backfill__2026-12-01T00:00:00+00:00"


def _context(try_number: int, *, max_tries: int = 1, run_type: str = "backfill") -> Any:
    """A task context as far as ``attach_or_create`` reads it: the task instance and its DAG run (as
    the Task SDK gives them), no task state."""
    pushed: dict[str, Any] = {}
    ti = types.SimpleNamespace(
        dag_id="first_try",
        task_id="train",
        run_id=RUN_ID,
        map_index=-1,
        try_number=try_number,
        max_tries=max_tries,
        xcom_push=lambda key, value: pushed.__setitem__(key, value),
    )
    return {"ti": ti, "dag_run": types.SimpleNamespace(run_id=RUN_ID, run_type=DagRunType(run_type))}


def _operator() -> VertexTrainingOperator:
    return VertexTrainingOperator(task_id="train", spec=spec("pass"), deferrable=False, retries=1)


def _calls(em: Emulator, before: dict[str, int]) -> dict[str, int]:
    now = em.call_counts()
    return {k: now[k] - before.get(k, 0) for k in now if now[k] != before.get(k, 0)}


@pytest.fixture
def queued(vertex_conn: Emulator) -> Emulator:
    """New jobs stay QUEUED: live, and no replica process is started."""
    update_faults(vertex_conn.config.faults, {"queued_s": 300.0})
    return vertex_conn


@pytest.mark.parametrize("run_type", ["backfill", "scheduled"])
def test_only_the_first_try_skips_the_look_up_and_a_retry_reattaches_without_a_create(
    queued: Emulator, run_type: str
) -> None:
    before = queued.call_counts()
    job = _operator().attach_or_create(_context(1, run_type=run_type))
    assert _calls(queued, before) == {"CreateCustomJob": 1, "ListCustomJobs": 1}

    # Try 1's worker died after its Create and before it recorded the job: try 2 finds it by its labels.
    before = queued.call_counts()
    again = _operator().attach_or_create(_context(2, run_type=run_type))
    assert again["name"] == job["name"]
    assert _calls(queued, before) == {"ListCustomJobs": 1}
    VertexJobsHook().cancel_job(job["name"])


def test_a_first_try_after_a_clear_is_not_a_first_try(queued: Emulator) -> None:
    """A clear starts a new budget with the next try number, never 1 again: the try looks up first and
    cancels the unfinished job of the try before the clear."""
    job = _operator().attach_or_create(_context(1, max_tries=1))
    before = queued.call_counts()
    cleared = _operator().attach_or_create(_context(2, max_tries=3))
    assert cleared["name"] != job["name"]
    assert _calls(queued, before) == {"ListCustomJobs": 2, "CancelCustomJob": 1, "CreateCustomJob": 1}
    VertexJobsHook().cancel_job(cleared["name"])


@pytest.mark.parametrize("run_type", ["manual", "operator_triggered"])
def test_the_first_try_of_a_run_whose_id_its_caller_chose_looks_up_first(
    queued: Emulator, run_type: str
) -> None:
    """A manual run deleted and made again with the same id (as ``dag.test()`` does on every call)
    starts at try 1 again: that try re-attaches to the job the deleted run's try left, with no Create."""
    job = _operator().attach_or_create(_context(1, run_type=run_type))
    before = queued.call_counts()
    again = _operator().attach_or_create(_context(1, run_type=run_type))
    assert again["name"] == job["name"]
    assert _calls(queued, before) == {"ListCustomJobs": 1}
    VertexJobsHook().cancel_job(job["name"])
