"""What the find_or_create tests share (`test_find_or_create.py`, `test_find_or_create_calls.py`): a fast
retry policy, a replica that sleeps, the run labels of a test, cancelling its live jobs and the calls
made since a point. The ``queued`` fixture is in conftest.py."""

from __future__ import annotations

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.find_or_create import LIVE_STATES
from airflow_vertex_dist.hooks.labels import run_labels
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from vertex_emulator.app import Emulator

__all__ = ["FAST_RETRY", "SLEEP", "adoption_labels", "calls_since", "cancel_live_jobs"]


FAST_RETRY = RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=30.0, rpc_timeout_s=10.0)
SLEEP = "import time; time.sleep(120)"


def adoption_labels(test: str) -> dict[str, str]:
    return run_labels("adopt_tests", test, "scheduled__2026-11-30T00:00:00+00:00", -1)


def cancel_live_jobs(hook: VertexJobsHook, labels: dict[str, str]) -> None:
    for job in hook.find_jobs("customJobs", labels):
        if job["state"] in LIVE_STATES:
            hook.cancel_job(job["name"])


def calls_since(em: Emulator, before: dict[str, int]) -> dict[str, int]:
    """The JobService calls since ``before`` (``em.call_counts()``), zeros left out."""
    now = em.call_counts()
    return {k: now[k] - before.get(k, 0) for k in now if now[k] != before.get(k, 0)}
