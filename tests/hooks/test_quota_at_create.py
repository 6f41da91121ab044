"""A ladder's hook does not retry a capacity quota at Create: RESOURCE_EXHAUSTED (the emulator's fault
API) is raised after one call, so the ladder moves on at once; the default hook retries it, as any
transient error, until its deadline."""

from __future__ import annotations

import pytest
from google.api_core import exceptions

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults

FAST = RetryPolicy(initial_s=0.01, maximum_s=0.02, deadline_s=0.5, rpc_timeout_s=10.0)


def test_a_ladders_hook_raises_a_quota_at_once(em: Emulator, grpc_conn: str) -> None:
    update_faults(
        em.config.faults, {"error_rate": {"CreateCustomJob": 1.0}, "error_codes": ["RESOURCE_EXHAUSTED"]}
    )
    body = testing.container_job("quota", "print(1)")
    ladder_hook = VertexJobsHook(retry_policy=FAST)
    ladder_hook.retry_quota_at_create = False
    before = em.call_counts().get("CreateCustomJob", 0)
    with pytest.raises(exceptions.ResourceExhausted, match="injected fault"):
        ladder_hook.create_custom_job(body)
    assert em.call_counts()["CreateCustomJob"] == before + 1
    plain = VertexJobsHook(retry_policy=FAST)
    with pytest.raises(exceptions.ResourceExhausted):
        plain.create_custom_job(body)
    assert em.call_counts()["CreateCustomJob"] > before + 2  # retried until the deadline
