"""What the find_or_create tests share (`test_find_or_create.py`, `test_find_or_create_calls.py`): a fast
retry policy, a replica that sleeps, the run labels of a test and cancelling its live jobs. The ``queued``
fixture is in conftest.py."""

from __future__ import annotations

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.find_or_create import LIVE_STATES
from airflow_vertex_dist.hooks.labels import run_labels
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

__all__ = ["FAST_RETRY", "SLEEP", "adoption_labels", "cancel_live_jobs"]


FAST_RETRY = RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=30.0, rpc_timeout_s=10.0)
SLEEP = "import time; time.sleep(120)"


def adoption_labels(test: str) -> dict[str, str]:
    return run_labels("adopt_tests", test, "scheduled__2026-11-30T00:00:00+00:00", -1)


def cancel_live_jobs(hook: VertexJobsHook, labels: dict[str, str]) -> None:
    for job in hook.find_jobs("customJobs", labels):
        if job["state"] in LIVE_STATES:
            hook.cancel_job(job["name"])
