"""The reliability scenarios on the Celery profile (two workers, two schedulers, two triggerers).

Run in a pytest run of their own (``make test-stack`` does): see ``celery_stack`` in conftest.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from .celery_stack import WORKERS, CeleryStack
from .figures import Figures
from .test_crashes import run_jobs

pytestmark = [pytest.mark.stack, pytest.mark.timeout(1200)]


def live_jobs(stack: CeleryStack, job_type: str) -> list[dict[str, Any]]:
    """Airflow's live jobs of one type (``SchedulerJob``, ``TriggererJob``): heartbeating, not ended."""
    params = {"job_type": job_type, "is_alive": "true", "limit": 100}
    return list(stack.api("GET", "/api/v2/jobs", params=params)["jobs"])


def test_smoke_a_deferred_and_a_worker_slot_task_succeed(celery_stack: CeleryStack) -> None:
    runs = {
        dag_id: celery_stack.trigger(dag_id, {"code": "print('trained')"})
        for dag_id in ("stack_deferred", "stack_sync")
    }
    states = {dag_id: celery_stack.wait_run(dag_id, run_id, timeout=300) for dag_id, run_id in runs.items()}
    jobs = {dag_id: run_jobs(celery_stack, dag_id, run_id) for dag_id, run_id in runs.items()}
    hosts = {
        dag_id: celery_stack.task_instance(dag_id, run_id, "train").get("hostname")
        for dag_id, run_id in runs.items()
    }
    alive = {kind: len(live_jobs(celery_stack, kind)) for kind in ("SchedulerJob", "TriggererJob")}
    worker_logs = "".join((celery_stack.root / f"{key}.log").read_text(errors="replace") for key in WORKERS)
    Figures.record(
        "celery",
        "smoke",
        {dag_id: {"outcome": states[dag_id], "jobs": len(jobs[dag_id])} for dag_id in runs},
    )
    assert states == {"stack_deferred": "success", "stack_sync": "success"}, hosts
    assert {dag_id: [j["state"] for j in js] for dag_id, js in jobs.items()} == {
        "stack_deferred": ["JOB_STATE_SUCCEEDED"],
        "stack_sync": ["JOB_STATE_SUCCEEDED"],
    }
    assert alive == {"SchedulerJob": 2, "TriggererJob": 2}
    # both tasks went through the Celery workers
    assert all(run_id in worker_logs for run_id in runs.values())
