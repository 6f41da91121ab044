"""The PersistentResourceService (v1) through the stock ``PersistentResourceServiceClient``, gRPC and REST:
the round trip with its long-running operations, a stockout and a quota refusing a resource, and
CustomJobs on a resource (no provisioning wait, no draw on the region's stock, a second job waiting for
the replicas, a pool mismatch refused naming the field, the job failed when its resource is deleted);
snapshot and restore keep the resources. Polls have deadlines; no sleep waits for a state."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from capacity_support import A100, admin, answer, client_for, gpu_job, wait_until
from google.api_core import exceptions
from google.cloud import aiplatform_v1

from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Capacity, Faults
from vertex_emulator.testing import PARENT, running_emulator, wait_for_state

State = aiplatform_v1.PersistentResource.State
A2 = {"machine_type": "a2-highgpu-1g", "accelerator_type": A100, "accelerator_count": 1}


@contextmanager
def resource_client(em: Emulator, transport: str) -> Iterator[Any]:
    """The stock PersistentResourceServiceClient over ``transport``."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.aiplatform_v1.services.persistent_resource_service.transports.grpc import (
        PersistentResourceServiceGrpcTransport,
    )

    if transport == "grpc":
        channel = grpc.insecure_channel(em.grpc_target)
        client = aiplatform_v1.PersistentResourceServiceClient(
            transport=PersistentResourceServiceGrpcTransport(channel=channel)
        )
    else:
        client = aiplatform_v1.PersistentResourceServiceClient(
            transport="rest",
            client_options={"api_endpoint": em.rest_endpoint},
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        )
    try:
        yield client
    finally:
        client.transport.close()


def _resource(replicas: int = 1, machine: dict[str, Any] | None = None, **pool: Any) -> Any:
    spec = {"machine_spec": machine or A2, "replica_count": replicas, **pool}
    return aiplatform_v1.PersistentResource(display_name="pr", resource_pools=[spec])


def _create(client: Any, rid: str, resource: Any) -> Any:
    return client.create_persistent_resource(
        parent=PARENT, persistent_resource=resource, persistent_resource_id=rid
    )


def _job(client: Any, rid: str, code: str = "pass", **kw: Any) -> Any:
    body = gpu_job(f"on-{rid}", code, **kw)
    body["jobSpec"]["persistentResourceId"] = rid
    return client.create_custom_job(
        parent=PARENT, custom_job=aiplatform_v1.CustomJob.from_json(json.dumps(body))
    )


def _hold(flag: Path) -> str:
    return f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.02)"


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_create_get_list_reboot_delete(tmp_path: Path, transport: str) -> None:
    with running_emulator(tmp_path) as em, resource_client(em, transport) as client:
        op = _create(client, "trainers", _resource(2))
        assert op.metadata is None or isinstance(
            op.metadata, aiplatform_v1.CreatePersistentResourceOperationMetadata
        )
        made = op.result(timeout=30)
        name = f"{PARENT}/persistentResources/trainers"
        assert (made.name, made.state, made.display_name) == (name, State.RUNNING, "pr")
        assert made.start_time and made.create_time
        got = client.get_persistent_resource(name=name)
        assert got.resource_pools[0].id == "pool-0" and got.resource_pools[0].replica_count == 2
        assert [r.name for r in client.list_persistent_resources(parent=PARENT)] == [name]
        with pytest.raises(exceptions.Conflict):  # REST: 409; gRPC: ALREADY_EXISTS, a Conflict
            _create(client, "trainers", _resource())
        assert client.reboot_persistent_resource(name=name).result(timeout=30).state == State.RUNNING
        client.delete_persistent_resource(name=name).result(timeout=30)
        with pytest.raises(exceptions.NotFound):
            client.get_persistent_resource(name=name)
        assert list(client.list_persistent_resources(parent=PARENT)) == []


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_bad_requests_name_the_field(tmp_path: Path, transport: str) -> None:
    with running_emulator(tmp_path) as em, resource_client(em, transport) as client:
        with pytest.raises(exceptions.BadRequest) as bad_id:
            _create(client, "Not_An_Id", _resource())
        assert "persistent_resource_id" in answer(bad_id.value)
        auto = {"autoscaling_spec": {"min_replica_count": 0, "max_replica_count": 3}}
        with pytest.raises(exceptions.BadRequest) as bad_min:
            _create(client, "auto", _resource(1, **auto))
        assert "resource_pools[0].autoscaling_spec.min_replica_count; Message: must be > 0" in answer(
            bad_min.value
        )


def test_a_stockout_ends_the_resource_in_error(tmp_path: Path) -> None:
    capacity = Capacity(stock={"us-central1": {A100: 1}}, stockout_after_s=0.3)
    with running_emulator(tmp_path, capacity=capacity) as em, resource_client(em, "grpc") as client:
        op = _create(client, "too-big", _resource(2))
        with pytest.raises(exceptions.GoogleAPICallError) as failed:
            op.result(timeout=30)
        assert "Resources are insufficient in region: us-central1" in str(failed.value)
        stored = client.get_persistent_resource(name=f"{PARENT}/persistentResources/too-big")
        assert stored.state == State.ERROR and stored.error.code == 8
        # it holds nothing: the one free A100 is still there for another resource
        assert _create(client, "fits", _resource(1)).result(timeout=30).state == State.RUNNING


def test_a_quota_refuses_the_create(tmp_path: Path) -> None:
    capacity = Capacity(quota={"us-central1": {A100: 1}})
    with running_emulator(tmp_path, capacity=capacity) as em, resource_client(em, "rest") as client:
        with pytest.raises(exceptions.TooManyRequests) as refused:
            _create(client, "over", _resource(2))
        assert "custom_model_training_nvidia_a100_gpus" in answer(refused.value)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_jobs_on_the_resource(tmp_path: Path, transport: str) -> None:
    flag = tmp_path / "release"
    # the region has no A100 left once the resource holds its one; provisioning a job takes 30 s
    capacity = Capacity(stock={"us-central1": {A100: 1}}, stockout_after_s=60)
    faults = Faults(provisioning_s=30)
    with running_emulator(tmp_path, capacity=capacity, faults=faults) as em:
        em.config.faults.provisioning_s = 0.0  # the resource provisions at once; jobs would wait 30 s
        with resource_client(em, transport) as resources, client_for(em, transport) as jobs:
            _create(resources, "one-a100", _resource(1)).result(timeout=30)
            em.config.faults.provisioning_s = 30.0
            first = _job(jobs, "one-a100", _hold(flag))
            running = wait_for_state(jobs, first.name, ["JOB_STATE_RUNNING"], timeout=20)
            assert running.state.name == "JOB_STATE_RUNNING"  # within 20 s: no 30 s provisioning
            _, stats = admin(em, "GET", "/emulator/stats")
            stock = [row for row in stats["gpus"]["stock"] if row["accelerator"] == A100]
            assert stock[0]["in_use"] == 1  # the resource's A100, not one more for the job
            used = resources.get_persistent_resource(name=f"{PARENT}/persistentResources/one-a100")
            assert used.resource_pools[0].used_replica_count == 1
            second = _job(jobs, "one-a100")
            wait_until(
                "the second job waiting", lambda: em.store.get(second.name)["state"] == "JOB_STATE_QUEUED"
            )
            assert em.store.get(second.name)["state"] == "JOB_STATE_QUEUED"
            flag.touch()
            assert wait_for_state(jobs, first.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0
            assert wait_for_state(jobs, second.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_job_that_does_not_fit_is_refused_naming_the_field(tmp_path: Path, transport: str) -> None:
    with running_emulator(tmp_path) as em, resource_client(em, transport) as resources:
        _create(resources, "small", _resource(1)).result(timeout=30)
        with client_for(em, transport) as jobs:
            with pytest.raises(exceptions.BadRequest) as mismatch:
                _job(jobs, "small", gpus=2)
            assert "job_spec.worker_pool_specs[0].machine_spec; Message: a2-highgpu-2g" in answer(
                mismatch.value
            )
            with pytest.raises(exceptions.BadRequest) as missing:
                _job(jobs, "absent")
            assert "job_spec.persistent_resource_id" in answer(missing.value)


@pytest.mark.parametrize("verb", ["delete", "reboot"])
def test_deleting_the_resource_cancels_its_running_job_and_rebooting_fails_it(
    tmp_path: Path, verb: str
) -> None:
    """A Delete cancels the jobs on the resource ("Delete a persistent resource": "the custom jobs are
    automatically cancelled before the persistent resource is deleted"); a reboot is not documented: the
    emulator fails the job with code 10."""
    flag = tmp_path / "never"
    with (
        running_emulator(tmp_path) as em,
        resource_client(em, "grpc") as resources,
        client_for(em, "grpc") as jobs,
    ):
        _create(resources, "doomed", _resource(1)).result(timeout=30)
        job = _job(jobs, "doomed", _hold(flag))
        wait_for_state(jobs, job.name, ["JOB_STATE_RUNNING"])
        name = f"{PARENT}/persistentResources/doomed"
        getattr(resources, f"{verb}_persistent_resource")(name=name).result(timeout=30)
        if verb == "delete":
            cancelled = wait_for_state(jobs, job.name, ["JOB_STATE_CANCELLED"])
            assert cancelled.error.code == 1 and "is being deleted" in cancelled.error.message
        else:
            failed = wait_for_state(jobs, job.name, ["JOB_STATE_FAILED"])
            assert failed.error.code == 10 and "was rebooted" in failed.error.message
        if verb == "reboot":  # RUNNING again: the next job runs on it
            after = _job(jobs, "doomed")
            assert wait_for_state(jobs, after.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


def test_snapshot_and_restore_keep_the_resources(tmp_path: Path) -> None:
    with running_emulator(tmp_path) as em, resource_client(em, "rest") as client:
        _create(client, "kept", _resource(1)).result(timeout=30)
        assert admin(em, "POST", "/emulator/state:snapshot", {"name": "with-resource"})[0] == 200
        client.delete_persistent_resource(name=f"{PARENT}/persistentResources/kept").result(timeout=30)
        assert list(client.list_persistent_resources(parent=PARENT)) == []
        assert admin(em, "POST", "/emulator/state:restore", {"name": "with-resource"})[0] == 200
        back = client.get_persistent_resource(name=f"{PARENT}/persistentResources/kept")
        assert back.state == State.RUNNING
        assert admin(em, "POST", "/emulator/state:reset", {})[0] == 200
        assert list(client.list_persistent_resources(parent=PARENT)) == []


def test_both_services_refuse_a_parent_that_is_not_a_location(tmp_path: Path) -> None:
    """One rule for the List's ``parent`` (core/parents.py), in the JobService and here. Over gRPC: the
    stock REST client refuses such a parent itself, before any request (its URI binding)."""
    transport = "grpc"
    with (
        running_emulator(tmp_path) as em,
        resource_client(em, transport) as resources,
        client_for(em, transport) as jobs,
    ):
        for call in (
            lambda: list(resources.list_persistent_resources(parent="projects/test-project")),
            lambda: list(jobs.list_custom_jobs(parent="projects/test-project")),
        ):
            with pytest.raises(exceptions.InvalidArgument) as refused:
                call()
            assert "is not a location resource name" in str(refused.value)
