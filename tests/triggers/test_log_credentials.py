"""A task's own ``impersonation_chain`` reaches the Cloud Logging reader, deferred or not (offline).

The connection is a ``google_cloud_platform`` one with a key and its own chain; a task's chain replaces
it for the job hook, and must for the logs too: the Logging client is built with credentials that
impersonate the task's target. The shared log poller keeps one reader per distinct chain. Nothing here
reads a log: clients are built (no network), never called.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from google.auth import impersonated_credentials

from airflow_vertex_dist.hooks.logs import VertexLogsHook
from airflow_vertex_dist.logs.poller import LogPoller, get_log_poller
from airflow_vertex_dist.logs.trigger_stream import TriggerLogStream
from tests.service_accounts import service_account_info

CONN = "gcp_logs"
JOB = "projects/p/locations/us-central1/customJobs/123"
CONN_TARGET = "conn-target@p.iam.gserviceaccount.com"
TASK_CHAIN = ["hop@p.iam.gserviceaccount.com", "task-target@p.iam.gserviceaccount.com"]
OTHER_CHAIN = ["other-target@p.iam.gserviceaccount.com"]


@pytest.fixture(autouse=True)
def gcp_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    info = service_account_info("p", "runner@p.iam.gserviceaccount.com")
    extra = {"project": "p", "keyfile_dict": json.dumps(info), "impersonation_chain": CONN_TARGET}
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN.upper()}", json.dumps({"conn_type": "google_cloud_platform", "extra": extra})
    )


def client_principal(hook: VertexLogsHook) -> tuple[str, list[str]]:
    """The (target, delegates) of the credentials the hook's Logging client was built with."""
    try:
        creds = hook.get_conn()._transport._credentials
        assert isinstance(creds, impersonated_credentials.Credentials)
        return creds._target_principal, list(creds._delegates or [])
    finally:
        hook.close()


def test_the_logs_hook_impersonates_the_tasks_chain_else_the_connections() -> None:
    assert client_principal(VertexLogsHook(CONN, impersonation_chain=TASK_CHAIN)) == (
        TASK_CHAIN[-1],
        TASK_CHAIN[:-1],
    )
    assert client_principal(VertexLogsHook(CONN)) == (CONN_TARGET, [])


def test_the_operator_and_sensor_worker_slot_readers_carry_the_tasks_chain() -> None:
    from airflow_vertex_dist.operators.training import VertexTrainingOperator
    from airflow_vertex_dist.sensors.jobs import VertexJobSensor
    from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

    spec = DistributedTrainingJob(
        display_name="x",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"), container=Container(image_uri="python:3.11")
        ),
    )
    op = VertexTrainingOperator(
        task_id="t",
        spec=spec,
        vertex_dist_conn_id=CONN,
        location="us-central1",
        impersonation_chain=TASK_CHAIN,
    )
    assert client_principal(op.job_logs.logs_hook("p")) == (TASK_CHAIN[-1], TASK_CHAIN[:-1])
    sensor = VertexJobSensor(
        task_id="s", job_name=JOB, vertex_dist_conn_id=CONN, impersonation_chain=",".join(OTHER_CHAIN)
    )
    assert sensor.hook.connection.impersonation_chain == tuple(OTHER_CHAIN)
    assert client_principal(sensor._logs_hook("p")) == (OTHER_CHAIN[-1], [])


def _trigger_readers(triggers: list[Any]) -> list[LogPoller]:
    """Start each trigger's log stream in one loop (as a triggerer would) and return their pollers;
    the streams are closed before the pollers' first read."""

    async def run() -> list[LogPoller]:
        streams = [TriggerLogStream(t) for t in triggers]
        pollers = [s.poller for s in streams]
        for stream in streams:
            stream.close()
        return pollers

    return asyncio.run(run())


def test_deferred_streams_read_with_the_chain_their_kwargs_carry_one_reader_per_chain() -> None:
    from airflow_vertex_dist.operators.training import VertexTrainingOperator
    from airflow_vertex_dist.sensors.jobs import VertexJobSensor
    from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool
    from airflow_vertex_dist.triggers.jobs import VertexJobTrigger
    from airflow_vertex_dist.triggers.sensors import VertexJobStateTrigger

    spec = DistributedTrainingJob(
        display_name="x",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"), container=Container(image_uri="python:3.11")
        ),
    )

    def rebuilt(trigger: Any) -> Any:  # through the trigger row's JSON, as the triggerer gets it
        path, kwargs = trigger.serialize()
        cls = VertexJobTrigger if path.endswith("VertexJobTrigger") else VertexJobStateTrigger
        return cls(**json.loads(json.dumps(kwargs)))

    task_op = VertexTrainingOperator(
        task_id="a",
        spec=spec,
        vertex_dist_conn_id=CONN,
        location="us-central1",
        impersonation_chain=TASK_CHAIN,
    )
    conn_op = VertexTrainingOperator(task_id="b", spec=spec, vertex_dist_conn_id=CONN, location="us-central1")
    sensor = VertexJobSensor(
        task_id="c", job_name=JOB, vertex_dist_conn_id=CONN, impersonation_chain=OTHER_CHAIN
    )
    same_as_a = VertexJobSensor(
        task_id="d", job_name=JOB, vertex_dist_conn_id=CONN, impersonation_chain=",".join(TASK_CHAIN)
    )
    triggers = [
        rebuilt(task_op.make_trigger(JOB)),
        rebuilt(conn_op.make_trigger(JOB)),
        rebuilt(sensor.make_trigger(JOB)),
        rebuilt(same_as_a.make_trigger(JOB)),
    ]
    assert triggers[2].impersonation_chain == OTHER_CHAIN[0]
    a, b, c, d = _trigger_readers(triggers)
    assert a is d  # one reader for one chain ...
    assert len({id(a), id(b), id(c)}) == 3  # ... and never one for two
    assert a.key.impersonation_chain == tuple(TASK_CHAIN)
    assert client_principal(a.hook) == (TASK_CHAIN[-1], TASK_CHAIN[:-1])
    assert client_principal(b.hook) == (CONN_TARGET, [])
    assert client_principal(c.hook) == (OTHER_CHAIN[-1], [])


def test_pollers_of_one_loop_share_the_read_budget_across_chains() -> None:
    async def run() -> bool:
        one = get_log_poller("p", conn_id=CONN, impersonation_chain=TASK_CHAIN)
        two = get_log_poller("p", conn_id=CONN, impersonation_chain=OTHER_CHAIN)
        return one is not two and one.budget is two.budget

    assert asyncio.run(run())
