"""The sensor triggers: Airflow's serialization round trip, and their run against the emulator."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from airflow.models.trigger import Trigger
from airflow.sdk.module_loading import import_string

from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.triggers.sensors import (
    VertexJobStateTrigger,
    VertexReplicaTrigger,
    VertexTrialTrigger,
)
from vertex_emulator import testing
from vertex_emulator.app import Emulator

NAME = "projects/test-project/locations/us-central1/customJobs/42"
TUNING = "projects/test-project/locations/us-central1/hyperparameterTuningJobs/7"
COMMON: dict[str, Any] = {
    "conn_id": "vertex_dist_default",
    "project_id": None,
    "location": None,
    "poll_interval": 0.2,
}

TRIGGERS = [
    VertexJobStateTrigger(job_name=NAME, target_states=["RUNNING"], failure_states=["FAILED"], **COMMON),
    VertexJobStateTrigger(job_name=NAME, **COMMON),
    VertexReplicaTrigger(job_name=NAME, replicas=["workerpool0-0", "workerpool1-*"], **COMMON),
    VertexTrialTrigger(job_name=TUNING, min_succeeded=3, **COMMON),
    VertexTrialTrigger(job_name=TUNING, metric_threshold=0.25, **COMMON),
]


@pytest.mark.parametrize("trigger", TRIGGERS, ids=lambda t: type(t).__name__)
def test_round_trip_through_the_trigger_row(trigger: Any) -> None:
    """Trigger.from_object -> encrypted serde kwargs -> classpath import, as the triggerer rebuilds it."""
    classpath, kwargs = trigger.serialize()
    row = Trigger.from_object(trigger)
    assert row.classpath == classpath == f"airflow_vertex_dist.triggers.sensors.{type(trigger).__name__}"
    rebuilt = import_string(row.classpath)(**row.kwargs)
    assert type(rebuilt) is type(trigger)
    assert rebuilt.serialize() == (classpath, kwargs)


def test_state_names_are_normalized_once() -> None:
    trigger = VertexJobStateTrigger(job_name=NAME, target_states=["succeeded"], **COMMON)
    assert trigger.serialize()[1]["target_states"] == ["JOB_STATE_SUCCEEDED"]
    with pytest.raises(ValueError, match=r"replicas\[0\]: 'chief' is not a replica name"):
        VertexReplicaTrigger(job_name=NAME, replicas=["chief"], **COMMON)


async def test_triggers_fire_one_event_from_the_shared_poller(vertex_conn: Emulator) -> None:
    """A job-state and a replica trigger on one running job share the poller: both fire once."""
    hook = VertexJobsHook()
    body = testing.container_job("sensed", "import time; time.sleep(30)", workers=1, enableWebAccess=True)
    body["labels"] = {"managed-by": "airflow-vertex-dist"}
    job = await asyncio.to_thread(hook.create_custom_job, body)
    running = VertexJobStateTrigger(job_name=job["name"], target_states=["RUNNING"], **COMMON)
    replicas = VertexReplicaTrigger(job_name=job["name"], replicas=["workerpool1-*"], **COMMON)
    gone = VertexJobStateTrigger(job_name=job["name"].replace(job["name"].rsplit("/", 1)[1], "1"), **COMMON)
    events = await asyncio.wait_for(
        asyncio.gather(*(anext(t.run()) for t in (running, replicas, gone))), timeout=30
    )
    assert [e.payload["status"] for e in events] == ["success", "success", "error"]
    assert events[0].payload["job"]["state"] == "JOB_STATE_RUNNING"
    assert events[1].payload["message"] == "replicas up 1/1: workerpool1-0"
    assert (
        "does not exist" in events[2].payload["message"]
        or "not found" in events[2].payload["message"].lower()
    )
    await asyncio.to_thread(hook.cancel_job, job["name"])
