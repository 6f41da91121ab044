"""The operators with a Google provider ``google_cloud_platform`` connection, as teams already have it:
a templated connection id, a per-task impersonation chain, and no secret in logs, XCom or rendered
fields (dag.test(), the emulator)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool
from tests.service_accounts import service_account_info
from vertex_emulator.app import Emulator

from .harness import PY, logged, run_dag, ti_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _key_json() -> tuple[str, str]:
    """A generated service-account key as JSON, and a line of its private key (the secret to look for)."""
    info = service_account_info("key-project", "runner@key-project.iam.gserviceaccount.com")
    return json.dumps(info), info["private_key"].splitlines()[5]


def _everything_stored(dr: Any) -> str:
    """Every XCom, rendered field and trigger row of the run, as text."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.models.trigger import Trigger
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        xcoms = session.scalars(select(XComModel.value).where(XComModel.run_id == dr.run_id)).all()
        rendered = session.scalars(
            select(RenderedTaskInstanceFields.rendered_fields).where(
                RenderedTaskInstanceFields.run_id == dr.run_id
            )
        ).all()
        triggers = session.scalars(select(Trigger.encrypted_kwargs)).all()
    assert xcoms and rendered
    return json.dumps([xcoms, rendered, triggers], default=str)


def test_a_google_cloud_platform_connection_runs_a_job_and_keeps_its_key_secret(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    key_json, secret_line = _key_json()
    extra = {
        # as the Google provider's connection form saves it, plus the emulator's endpoint and setting
        "extra__google_cloud_platform__project": "test-project",
        "extra__google_cloud_platform__keyfile_dict": key_json,
        "extra__google_cloud_platform__key_path": "",
        "extra__google_cloud_platform__num_retries": 5,
        "extra__google_cloud_platform__impersonation_chain": "conn-sa@test-project.iam.gserviceaccount.com",
        "api_endpoint": emulator.grpc_target,
        "emulator": True,
        "web_endpoint": emulator.rest_endpoint,
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_TEAM_GCP", json.dumps({"conn_type": "google_cloud_platform", "extra": extra})
    )
    the_spec = DistributedTrainingJob(
        display_name="gcp-conn",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(image_uri="python:3.11", command=(PY, "-c", "print('ok')")),
        ),
    )
    with DAG("gcp_conn", schedule=None, start_date=START, params={"conn": "team_gcp"}) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=the_spec,
            vertex_dist_conn_id="{{ params.conn }}",
            location="us-central1",
            impersonation_chain=["hop@test-project.iam.gserviceaccount.com", "{{ params.conn }}-sa@x.com"],
            deferrable=True,
            poll_interval=0.3,
        )
    dr = run_dag(dag)
    logs = logged(capfd)
    assert ti_state(dr, "train") == "success", logs
    [job] = emulator.store.list("customJobs", "projects/test-project/locations/us-central1")
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    stored = _everything_stored(dr)
    assert "team_gcp-sa@x.com" in stored  # the rendered chain is there ...
    assert secret_line not in stored and secret_line not in logs  # ... the key is not
    assert "PRIVATE KEY" not in stored and "PRIVATE KEY" not in logs


def test_the_task_chain_reaches_the_hook_and_the_trigger(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_TEAM_GCP",
        json.dumps(
            {
                "conn_type": "google_cloud_platform",
                "extra": {"project": "p", "impersonation_chain": "conn-sa@p.iam.gserviceaccount.com"},
            }
        ),
    )
    spec = DistributedTrainingJob(
        display_name="x",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"), container=Container(image_uri="python:3.11")
        ),
    )
    name = "projects/p/locations/us-central1/customJobs/1"
    own = VertexTrainingOperator(
        task_id="t",
        spec=spec,
        vertex_dist_conn_id="team_gcp",
        location="us-central1",
        impersonation_chain="a@p.iam.gserviceaccount.com, b@p.iam.gserviceaccount.com",
    )
    assert own.hook.connection.impersonation_chain == (
        "a@p.iam.gserviceaccount.com",
        "b@p.iam.gserviceaccount.com",
    )
    assert own.make_trigger(name).serialize()[1]["impersonation_chain"] == (
        "a@p.iam.gserviceaccount.com,b@p.iam.gserviceaccount.com"
    )
    inherited = VertexTrainingOperator(
        task_id="u", spec=spec, vertex_dist_conn_id="team_gcp", location="us-central1"
    )
    assert inherited.hook.connection.impersonation_chain == ("conn-sa@p.iam.gserviceaccount.com",)
    assert inherited.make_trigger(name).serialize()[1]["impersonation_chain"] == ""


def test_the_listener_cancels_with_the_tasks_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner record the task pushes carries its own impersonation chain, and the hook the listener
    cancels with (when a user marks the task by hand) has the task's connection and credentials."""
    from google.auth import impersonated_credentials

    from airflow_vertex_dist.hooks._clients import build_credentials
    from airflow_vertex_dist.links import OwnedJob

    key_json, _ = _key_json()
    extra = {
        "keyfile_dict": key_json,
        "project": "p",
        "impersonation_chain": "conn-sa@p.iam.gserviceaccount.com",
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_TEAM_GCP", json.dumps({"conn_type": "google_cloud_platform", "extra": extra})
    )
    spec = DistributedTrainingJob(
        display_name="x",
        primary=WorkerPool(machine=Machine(machine_type="n1-standard-4"), container=Container(image_uri="t")),
    )
    name = "projects/p/locations/europe-west4/customJobs/7"
    chain = ["hop@p.iam.gserviceaccount.com", "task-sa@p.iam.gserviceaccount.com"]
    own = VertexTrainingOperator(
        task_id="t",
        spec=spec,
        vertex_dist_conn_id="team_gcp",
        location="europe-west4",
        impersonation_chain=chain,
    )
    record = json.loads(json.dumps(own.owned_job(name).record()))  # as XCom stores it
    assert record == {"name": name, "conn_id": "team_gcp", "impersonation_chain": chain}
    owned = OwnedJob.from_record(record)
    assert owned is not None
    hook = owned.hook()
    assert hook.connection == own.hook.connection
    assert (hook.project_id, hook.location) == ("p", "europe-west4")
    creds, _ = build_credentials(hook.connection)
    assert isinstance(creds, impersonated_credentials.Credentials)
    assert creds._target_principal == "task-sa@p.iam.gserviceaccount.com"
    assert creds._delegates == ["hop@p.iam.gserviceaccount.com"]

    # a task without a chain of its own: the connection's applies, for the task and for the cancel
    inherited = VertexTrainingOperator(
        task_id="u", spec=spec, vertex_dist_conn_id="team_gcp", location="europe-west4"
    )
    owned = OwnedJob.from_record(inherited.owned_job(name).record())
    assert owned is not None and owned.impersonation_chain == ()
    assert owned.hook().connection == inherited.hook.connection
    creds, _ = build_credentials(owned.hook().connection)
    assert creds._target_principal == "conn-sa@p.iam.gserviceaccount.com"
    # a record pushed by an earlier version (no chain in it) still names the job
    assert OwnedJob.from_record({"name": name, "conn_id": "team_gcp"}) == OwnedJob(name, "team_gcp")
    assert OwnedJob.from_record({"name": name, "conn_id": "team_gcp", "impersonation_chain": "x"}) is None
