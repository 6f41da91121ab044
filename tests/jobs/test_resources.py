"""What a persistent resource's JSON means (``jobs.resources``): its idle timeout label, the resource a job
names, and how long a resource has been idle, read from the jobs that name it."""

from __future__ import annotations

from typing import Any

from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos
from airflow_vertex_dist.jobs.resources import (
    idle_timeout_label,
    idle_timeout_of,
    idleness,
    job_resource_id,
    resource_id_of,
)

NAME = "projects/p/locations/us-central1/persistentResources/gpus"
NOW = rfc3339_nanos("2024-01-01T12:00:00Z")


def resource(**extra: Any) -> dict[str, Any]:
    return {
        "name": NAME,
        "createTime": "2024-01-01T10:00:00Z",
        "startTime": "2024-01-01T10:05:00Z",
        "resourcePools": [{"id": "pool-0", "replicaCount": "2"}],
        **extra,
    }


def job(state: str, end: str | None = None, rid: str = "gpus", tuning: bool = False) -> dict[str, Any]:
    spec = {"persistentResourceId": rid}
    out: dict[str, Any] = {
        "name": f"jobs/{state}",
        "state": state,
        ("trialJobSpec" if tuning else "jobSpec"): spec,
    }
    if end:
        out["endTime"] = end
    return out


def test_the_idle_timeout_label_round_trips() -> None:
    labels = idle_timeout_label(7200.0)
    assert labels == {"airflow-idle-timeout": "7200s"}
    assert idle_timeout_of({"labels": labels}) == 7200.0
    assert idle_timeout_of({"labels": {"airflow-idle-timeout": "soon"}}) is None
    assert idle_timeout_of({}) is None


def test_the_resource_a_job_names() -> None:
    assert resource_id_of(resource()) == "gpus"
    assert job_resource_id(job("JOB_STATE_RUNNING")) == "gpus"
    assert job_resource_id(job("JOB_STATE_RUNNING", tuning=True)) == "gpus"
    assert job_resource_id({"jobSpec": {}}) is None


def test_never_used_it_is_idle_since_it_started() -> None:
    assert idleness(resource(), [], NOW) == (None, 6900.0)


def test_idle_since_the_last_job_on_it_ended() -> None:
    jobs = [
        job("JOB_STATE_SUCCEEDED", "2024-01-01T11:00:00Z"),
        job("JOB_STATE_FAILED", "2024-01-01T11:30:00Z"),
        job("JOB_STATE_SUCCEEDED", "2024-01-01T11:59:00Z", rid="other"),  # another resource's
    ]
    assert idleness(resource(), jobs, NOW) == (None, 1800.0)


def test_a_live_job_or_used_replicas_make_it_busy() -> None:
    busy = idleness(resource(), [job("JOB_STATE_QUEUED")], NOW)
    assert busy.busy == "job jobs/JOB_STATE_QUEUED runs on it (JOB_STATE_QUEUED)"
    used = resource(resourcePools=[{"id": "pool-0", "replicaCount": "2", "usedReplicaCount": "1"}])
    assert idleness(used, [], NOW).busy == "pool pool-0 has 1 replicas in use"
