"""Persistent resources for real (dag.test(), the emulator's PersistentResourceService, real replicas):
a ladder rung on an ensured or existing resource, its pending_limit covering the resource's creation,
the ensure, delete and sweep operators, and the resource trigger. Resources and jobs are read back
through the stock v1 clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.hooks.persistent_resources import PersistentResourcesHook
from airflow_vertex_dist.operators.persistent_resources import (
    VertexDeletePersistentResourceOperator,
    VertexEnsurePersistentResourceOperator,
    VertexSweepPersistentResourcesOperator,
)
from airflow_vertex_dist.specs import (
    CapacityLadder,
    PersistentResource,
    PersistentResourceUse,
    ResourcePool,
    Rung,
)
from airflow_vertex_dist.triggers.resource import PersistentResourceTrigger
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Capacity, Faults

from .harness import CONN_ENV, connection_env, dag_xcom, logged, poll, run_dag, ti_state
from .test_capacity import A100, L4, Training, live_jobs_watch, spec, task_jobs

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
PARENT = "projects/test-project/locations/us-central1"
GPUS = PersistentResource(resource_id="gpus", pools=(ResourcePool(machine=A100, replica_count=2),))


def resource_client(em: Emulator) -> Any:
    """The stock PersistentResourceServiceClient over gRPC to ``em``."""
    import grpc
    from google.cloud.aiplatform_v1 import PersistentResourceServiceClient
    from google.cloud.aiplatform_v1.services.persistent_resource_service.transports.grpc import (
        PersistentResourceServiceGrpcTransport,
    )

    channel = grpc.insecure_channel(em.grpc_target)
    return PersistentResourceServiceClient(transport=PersistentResourceServiceGrpcTransport(channel=channel))


def stock_resource(em: Emulator, rid: str = "gpus") -> Any:
    return resource_client(em).get_persistent_resource(name=f"{PARENT}/persistentResources/{rid}")


def create_by_hand(em: Emulator, rid: str, replicas: int, labels: dict[str, str] | None = None) -> None:
    """A resource made outside the provider (the stock client), waited on until RUNNING."""
    from google.cloud.aiplatform_v1 import types as v1

    body = PersistentResource(
        resource_id=rid, pools=(ResourcePool(machine=A100, replica_count=replicas),), labels=labels or {}
    ).to_api()
    resource_client(em).create_persistent_resource(
        parent=PARENT,
        persistent_resource=v1.PersistentResource.from_json(json.dumps(body)),
        persistent_resource_id=rid,
    )
    poll(lambda: stock_resource(em, rid).state.name == "RUNNING", what=f"{rid} RUNNING")


def long_job_on(em: Emulator, rid: str) -> str:
    """A CustomJob on resource ``rid`` that runs until cancelled (the stock JobService client)."""
    from google.cloud.aiplatform_v1 import types as v1

    body = testing.container_job("on-resource", "import time; time.sleep(300)")
    pool = body["jobSpec"]["workerPoolSpecs"][0]
    pool["machineSpec"] = A100.to_api()
    pool["diskSpec"] = {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100}
    body["jobSpec"]["persistentResourceId"] = rid
    client = testing.grpc_client(em)
    job = client.create_custom_job(parent=PARENT, custom_job=v1.CustomJob.from_json(json.dumps(body)))
    poll(lambda: client.get_custom_job(name=job.name).state.name == "JOB_STATE_RUNNING", what="job RUNNING")
    return str(job.name)


@pytest.fixture
def no_a100(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """No A100 free in us-central1: a resource of A100s stays PROVISIONING (for 60 s, then ERROR)."""
    capacity = Capacity(stock={"us-central1": {"NVIDIA_TESLA_A100": 0}}, stockout_after_s=60.0)
    with testing.running_emulator(tmp_path, capacity=capacity) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        yield em


def ladder(use: PersistentResourceUse, limit: float | None = None) -> CapacityLadder:
    return CapacityLadder(
        rungs=(
            Rung(name="reserved", persistent_resource=use, pending_limit=limit),
            Rung(name="l4", machine=L4),
        )
    )


def test_a_rung_on_an_ensured_resource_creates_it_once_and_runs_its_jobs_on_it(
    vertex_conn: Emulator, capfd: Any
) -> None:
    use = PersistentResourceUse(resource=GPUS, ensure=True, idle_timeout=timedelta(hours=1))
    with DAG("pr_ensured", schedule=None, start_date=START) as dag:
        Training(
            task_id="train",
            spec=spec("print('ok')"),
            capacity=ladder(use),
            deferrable=False,
            poll_interval=0.2,
        )
    first = run_dag(dag, logical_date=START)
    assert ti_state(first, "train") == "success"
    made = stock_resource(vertex_conn)
    assert made.state.name == "RUNNING"
    assert dict(made.labels) == {"managed-by": "airflow-vertex-dist", "airflow-idle-timeout": "3600s"}
    text = logged(capfd)
    assert "Rung 1 (reserved): creating persistent resource gpus" in text
    second = run_dag(dag, logical_date=START + timedelta(days=1))  # the next run reuses it
    assert ti_state(second, "train") == "success"
    assert stock_resource(vertex_conn).create_time == made.create_time
    assert "creating persistent resource" not in logged(capfd)
    jobs = task_jobs(vertex_conn)
    assert len(jobs) == 2
    for job in jobs:
        assert job["state"] == "JOB_STATE_SUCCEEDED" and job["labels"]["airflow-rung"] == "r1"
        assert job["jobSpec"]["persistentResourceId"] == "gpus"
    assert dag_xcom(second, "train")["rung"]["name"] == "reserved"


def test_a_resource_not_running_within_the_pending_limit_falls_back_to_the_next_rung(
    no_a100: Emulator, capfd: Any
) -> None:
    """No A100s to provision the resource: rung 1's limit (1 s) ends the wait for it, rung 2 runs."""
    use = PersistentResourceUse(resource=GPUS, ensure=True, idle_timeout=3600)
    with DAG("pr_provisioning", schedule=None, start_date=START) as dag:
        Training(
            task_id="train",
            spec=spec("print('ok')"),
            capacity=ladder(use, 1.0),
            deferrable=True,
            poll_interval=0.2,
        )
    with live_jobs_watch(no_a100) as most:
        dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    [job] = task_jobs(no_a100)  # no job on rung 1: its resource never ran
    assert job["labels"]["airflow-rung"] == "r2" and "persistentResourceId" not in job["jobSpec"]
    [left] = dag_xcom(dr, "train")["rung"]["left"]
    assert (left["rung"], left["outcome"], left["job"]) == (1, "stockout", None)
    assert "persistent resource" in left["reason"] and "is PROVISIONING after" in left["reason"]
    assert stock_resource(no_a100).state.name == "PROVISIONING"  # left for the sweep, not deleted
    assert most[0] == 1
    assert "waiting for persistent resource" in logged(capfd)


def test_a_missing_existing_resource_falls_back_to_the_next_rung(vertex_conn: Emulator) -> None:
    use = PersistentResourceUse(resource=GPUS)  # ensure=False: the resource must be there
    with DAG("pr_missing", schedule=None, start_date=START) as dag:
        Training(
            task_id="train",
            spec=spec("print('ok')"),
            capacity=ladder(use),
            deferrable=False,
            poll_interval=0.2,
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    [left] = dag_xcom(dr, "train")["rung"]["left"]
    assert left["outcome"] == "stockout" and "does not exist (ensure=False)" in left["reason"]
    [job] = task_jobs(vertex_conn)
    assert job["labels"]["airflow-rung"] == "r2"


def test_a_resource_of_another_shape_fails_the_task_without_a_job(vertex_conn: Emulator, capfd: Any) -> None:
    create_by_hand(vertex_conn, "gpus", replicas=1)
    ensured = PersistentResourceUse(resource=GPUS, ensure=True)
    # the declared shape fits the job; the real resource (one replica) does not: checked before the Create
    existing = PersistentResourceUse(resource=GPUS)
    with DAG("pr_other_shape", schedule=None, start_date=START) as dag:
        two = spec("print('ok')").model_copy(update={"workers": None})
        Training(task_id="ensured", spec=two, capacity=ladder(ensured), deferrable=False, retries=2)
        from airflow_vertex_dist.specs import WorkerPool

        pool = two.primary
        with_worker = two.model_copy(update={"workers": WorkerPool.like(pool, replica_count=1)})
        Training(task_id="existing", spec=with_worker, capacity=ladder(existing), deferrable=False, retries=2)
    dr = run_dag(dag)
    assert ti_state(dr, "ensured") == "failed" and ti_state(dr, "existing") == "failed"
    assert task_jobs(vertex_conn) == []
    text = logged(capfd)
    assert (
        "persistent resource projects/test-project/locations/us-central1/persistentResources/gpus exists "
        in text
    )
    assert "with another shape than the rung ensures: pools[0] (2x a2-highgpu-1g" in text
    assert "the job does not fit the real resource:\nworkers.replica_count: primary 1 + workers 1 = 2" in text


def test_ensure_creates_then_reuses_or_refuses(vertex_conn: Emulator) -> None:
    with DAG("pr_ensure_op", schedule=None, start_date=START) as dag:
        VertexEnsurePersistentResourceOperator(
            task_id="ensure", resource=GPUS, idle_timeout=7200, deferrable=True, poll_interval=0.2
        )
        VertexEnsurePersistentResourceOperator(task_id="again", resource=GPUS.model_dump(), poll_interval=0.2)
        VertexEnsurePersistentResourceOperator(task_id="strict", resource=GPUS, if_exists="fail")
    dag.get_task("ensure") >> dag.get_task("again") >> dag.get_task("strict")
    dr = run_dag(dag)
    out = dag_xcom(dr, "ensure")
    assert (out["resource_id"], out["state"], out["created"]) == ("gpus", "RUNNING", True)
    assert out["labels"]["airflow-idle-timeout"] == "7200s"
    assert dag_xcom(dr, "again")["created"] is False
    assert ti_state(dr, "strict") == "failed"


def test_ensure_waits_for_a_provisioning_resource_in_the_triggerer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    with testing.running_emulator(tmp_path, faults=Faults(provisioning_s=1.0)) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        with DAG("pr_ensure_deferred", schedule=None, start_date=START) as dag:
            VertexEnsurePersistentResourceOperator(
                task_id="ensure", resource=GPUS, deferrable=True, poll_interval=0.2
            )
        dr = run_dag(dag)
        assert dag_xcom(dr, "ensure")["state"] == "RUNNING"
        assert "Deferring: waiting for persistent resource gpus in the triggerer" in logged(capfd)


def test_ensure_fails_when_the_resource_errs(no_a100: Emulator) -> None:
    """A stockout ends the resource's provisioning in ERROR (after 60 s of the emulator's settings: the
    trigger's own timeout, 1 s here, ends the wait first)."""
    with DAG("pr_ensure_timeout", schedule=None, start_date=START) as dag:
        VertexEnsurePersistentResourceOperator(
            task_id="ensure", resource=GPUS, deferrable=True, poll_interval=0.2, timeout=1.0
        )
    dr = run_dag(dag)
    assert ti_state(dr, "ensure") == "failed"


def test_delete_refuses_a_resource_a_job_runs_on(vertex_conn: Emulator, capfd: Any) -> None:
    create_by_hand(vertex_conn, "gpus", replicas=2)
    job = long_job_on(vertex_conn, "gpus")
    with DAG("pr_delete_busy", schedule=None, start_date=START) as dag:
        VertexDeletePersistentResourceOperator(task_id="delete", resource_id="gpus")
    dr = run_dag(dag)
    assert ti_state(dr, "delete") == "failed"
    assert f"not deleting persistent resource {PARENT}/persistentResources/gpus: " in logged(capfd)
    assert stock_resource(vertex_conn).state.name == "RUNNING"
    client = testing.grpc_client(vertex_conn)
    client.cancel_custom_job(name=job)
    poll(lambda: client.get_custom_job(name=job).state.name == "JOB_STATE_CANCELLED", what="cancelled")
    with DAG("pr_delete_idle", schedule=None, start_date=START) as dag:
        VertexDeletePersistentResourceOperator(task_id="delete", resource_id="gpus", timeout=30)
        VertexDeletePersistentResourceOperator(task_id="again", resource_id="gpus")
    dag.get_task("delete") >> dag.get_task("again")
    dr = run_dag(dag)
    assert dag_xcom(dr, "delete")["deleted"] is True
    assert dag_xcom(dr, "again")["deleted"] is False
    assert PersistentResourcesHook().get_resource("gpus") is None


def test_the_sweep_deletes_only_its_idle_resources(vertex_conn: Emulator) -> None:
    ours = {"managed-by": "airflow-vertex-dist"}
    create_by_hand(vertex_conn, "idle", 1, {**ours, "airflow-idle-timeout": "0s"})
    create_by_hand(vertex_conn, "fresh", 1, {**ours, "airflow-idle-timeout": "3600s"})
    create_by_hand(vertex_conn, "theirs", 1, {"airflow-idle-timeout": "0s"})
    create_by_hand(vertex_conn, "busy", 1, {**ours, "airflow-idle-timeout": "0s"})
    job = long_job_on(vertex_conn, "busy")
    with DAG("pr_sweep", schedule=None, start_date=START) as dag:
        VertexSweepPersistentResourcesOperator(task_id="sweep")
    dr = run_dag(dag)
    assert dag_xcom(dr, "sweep") == [f"{PARENT}/persistentResources/idle"]
    hook = PersistentResourcesHook()
    poll(lambda: hook.get_resource("idle") is None, what="idle deleted")
    assert {r["name"].rsplit("/", 1)[-1] for r in hook.list_resources()} == {"fresh", "theirs", "busy"}
    testing.grpc_client(vertex_conn).cancel_custom_job(name=job)


def test_the_hook_speaks_rest_too(vertex_conn: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONN_ENV, connection_env(vertex_conn, transport="rest"))
    hook = PersistentResourcesHook()
    resource, created = hook.create_resource("gpus", GPUS.to_api())
    assert created and resource["name"] == f"{PARENT}/persistentResources/gpus"
    assert hook.create_resource("gpus", GPUS.to_api())[1] is False  # ALREADY_EXISTS: it is there
    assert hook.wait_for_state("gpus", frozenset({"RUNNING"}), timeout_s=30, poll_s=0.1)["state"] == "RUNNING"
    assert hook.delete_resource("gpus") is True
    assert hook.delete_resource("nothing") is False


def test_the_trigger_serializes_as_it_was_built() -> None:
    trigger = PersistentResourceTrigger(
        resource_id="gpus", conn_id="c", project_id="p", location="us-east1", poll_interval=3, timeout=60
    )
    path, kwargs = trigger.serialize()
    assert path == "airflow_vertex_dist.triggers.resource.PersistentResourceTrigger"
    assert PersistentResourceTrigger(**kwargs).serialize() == (path, kwargs)


def test_a_job_waiting_on_a_full_resource_past_the_pending_limit_falls_back(vertex_conn: Emulator) -> None:
    """The resource's only replica is taken: the rung's job waits QUEUED, its limit ends the wait."""
    create_by_hand(vertex_conn, "gpus", replicas=1)
    other = long_job_on(vertex_conn, "gpus")
    one = PersistentResource(resource_id="gpus", pools=(ResourcePool(machine=A100, replica_count=1),))
    use = PersistentResourceUse(resource=one)
    with DAG("pr_full", schedule=None, start_date=START) as dag:
        Training(
            task_id="train",
            spec=spec("print('ok')"),
            capacity=ladder(use, 1.0),
            deferrable=False,
            poll_interval=0.2,
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    first, second = task_jobs(vertex_conn)
    assert first["labels"]["airflow-rung"] == "r1" and first["state"] == "JOB_STATE_CANCELLED"
    assert "startTime" not in first and first["jobSpec"]["persistentResourceId"] == "gpus"
    assert second["labels"]["airflow-rung"] == "r2" and second["state"] == "JOB_STATE_SUCCEEDED"
    [left] = dag_xcom(dr, "train")["rung"]["left"]
    assert left["outcome"] == "stockout" and "stayed QUEUED for" in left["reason"]
    # the job's limit is the rung's 1 s less the time the rung spent on the resource before the Create
    assert "past the rung's pending_limit of 0.9" in left["reason"]
    testing.grpc_client(vertex_conn).cancel_custom_job(name=other)


def test_a_resource_deleted_under_its_job_moves_the_run_to_the_next_rung(
    vertex_conn: Emulator, tmp_path: Path
) -> None:
    """The service cancels the jobs on a resource it deletes ("Delete a persistent resource"); the
    ladder reads the resource, finds it gone, and leaves the rung ("resource lost") for the next, where
    the same spec trains. A cancel with the resource still there would fail the task instead."""
    import threading

    flag = tmp_path / "go"
    create_by_hand(vertex_conn, "gpus", 2)
    use = PersistentResourceUse(resource=GPUS)
    code = f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.1)"
    with DAG("pr_deleted", schedule=None, start_date=START) as dag:
        Training(task_id="train", spec=spec(code), capacity=ladder(use), deferrable=False, poll_interval=0.2)

    def delete_under_the_job() -> None:
        client = testing.grpc_client(vertex_conn)
        poll(
            lambda: any(
                j["state"] == "JOB_STATE_RUNNING" and j["jobSpec"].get("persistentResourceId") == "gpus"
                for j in task_jobs(vertex_conn)
            ),
            what="the rung-1 job RUNNING on the resource",
        )
        resource_client(vertex_conn).delete_persistent_resource(
            name=f"{PARENT}/persistentResources/gpus"
        ).result(timeout=30)
        client.transport.close()
        flag.touch()  # the next rung's job may end

    deleter = threading.Thread(target=delete_under_the_job)
    deleter.start()
    dr = run_dag(dag)
    deleter.join(60)
    assert ti_state(dr, "train") == "success"
    jobs = task_jobs(vertex_conn)
    assert [(j["labels"]["airflow-rung"], j["state"]) for j in jobs] == [
        ("r1", "JOB_STATE_CANCELLED"),
        ("r2", "JOB_STATE_SUCCEEDED"),
    ]
    [left] = dag_xcom(dr, "train")["rung"]["left"]
    assert left["outcome"] == "resource lost" and "was deleted" in left["reason"], left
