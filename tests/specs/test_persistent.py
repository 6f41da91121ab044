"""Persistent resources in the specs (``specs.persistent``): a resource's shape and its Create body, the
fit rule of a job on it (Google's "Run custom training jobs on a persistent resource": machine and disk
type equal to a resource pool's, replicas within its replica_count or max_replica_count), a rung on one
checked when the ladder is planned, and a real resource's pools read back from the API's JSON."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from airflow_vertex_dist.specs import (
    CapacityLadder,
    Container,
    Disk,
    DistributedTrainingJob,
    HyperparameterTuningJob,
    Machine,
    Metric,
    PersistentResource,
    PersistentResourceUse,
    ReductionServer,
    ResourcePool,
    Rung,
    Study,
    WorkerPool,
)
from airflow_vertex_dist.specs.capacity import LadderError, plan_ladder
from airflow_vertex_dist.specs.errors import SpecValidationError
from airflow_vertex_dist.specs.parameters import IntegerParameter
from airflow_vertex_dist.specs.persistent import fit_errors, pool_shapes, shape_difference

A100 = Machine(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)
L4 = Machine(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)
CPU = Machine(machine_type="n1-standard-4")


def pool(machine: Machine = A100, replicas: int = 1, **extra: Any) -> WorkerPool:
    return WorkerPool(
        machine=machine, replica_count=replicas, container=Container(image_uri="python:3.11"), **extra
    )


def job(workers: int = 0, **extra: Any) -> DistributedTrainingJob:
    return DistributedTrainingJob(
        display_name="on-a-resource",
        primary=pool(),
        workers=pool(replicas=workers) if workers else None,
        **extra,
    )


def resource(*pools: ResourcePool, rid: str = "gpus") -> PersistentResource:
    return PersistentResource(resource_id=rid, pools=pools or (ResourcePool(machine=A100, replica_count=2),))


def test_the_create_body_is_the_v1_shape() -> None:
    spec = PersistentResource(
        resource_id="gpus",
        display_name="nightly",
        labels={"team": "ml"},
        pools=(
            ResourcePool(id="a100", machine=A100, replica_count=1, min_replica_count=1, max_replica_count=4),
            ResourcePool(machine=CPU, disk=Disk(boot_disk_type="pd-standard", boot_disk_size_gb=200)),
        ),
    )
    assert spec.to_api({"managed-by": "airflow-vertex-dist"}) == {
        "displayName": "nightly",
        "labels": {"team": "ml", "managed-by": "airflow-vertex-dist"},
        "resourcePools": [
            {
                "id": "a100",
                "machineSpec": {
                    "machineType": "a2-highgpu-1g",
                    "acceleratorType": "NVIDIA_TESLA_A100",
                    "acceleratorCount": 1,
                },
                "replicaCount": "1",
                "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
                "autoscalingSpec": {"minReplicaCount": "1", "maxReplicaCount": "4"},
            },
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": "1",
                "diskSpec": {"bootDiskType": "pd-standard", "bootDiskSizeGb": 200},
            },
        ],
    }


def test_the_body_is_a_valid_v1_message() -> None:
    from google.cloud.aiplatform_v1 import types as v1

    body = resource(ResourcePool(machine=A100, replica_count=2, max_replica_count=3)).to_api()
    message = v1.PersistentResource.from_json(__import__("json").dumps(body))
    assert message.resource_pools[0].autoscaling_spec.max_replica_count == 3


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (
            {"min_replica_count": 0},
            "min_replica_count: a persistent resource's pool keeps at least 1 replica (got 0)",
        ),
        (
            {"replica_count": 2, "min_replica_count": 3},
            "min_replica_count: must be at most replica_count (2) (got 3)",
        ),
        (
            {"replica_count": 3, "max_replica_count": 2},
            "max_replica_count: must be at least replica_count (3) (got 2)",
        ),
        (
            {"min_replica_count": 1, "max_replica_count": 1},
            "max_replica_count: must be above min_replica_count (1) (got 1)",
        ),
        (
            {"id": "Pool_1"},
            "id: 1-63 lowercase letters, digits or '-', starting with a letter (got 'Pool_1')",
        ),
    ],
)
def test_a_pool_out_of_its_bounds_is_refused_naming_the_field(fields: dict[str, Any], error: str) -> None:
    with pytest.raises(SpecValidationError) as info:
        ResourcePool(machine=A100, **fields)
    assert error in str(info.value)


@pytest.mark.parametrize("rid", ["Gpus", "1gpus", "gpus-", "g" * 64, "gpu_s"])
def test_a_bad_resource_id_is_refused(rid: str) -> None:
    with pytest.raises(SpecValidationError, match="resource_id: 1-63 lowercase letters"):
        resource(rid=rid)


def test_a_resource_needs_pools_with_different_ids() -> None:
    with pytest.raises(SpecValidationError, match="pools: a persistent resource needs at least one"):
        PersistentResource(resource_id="gpus", pools=())
    with pytest.raises(SpecValidationError, match="pools: every pool's id must be different"):
        resource(ResourcePool(id="a", machine=A100), ResourcePool(id="a", machine=L4))


def test_an_idle_timeout_belongs_to_an_ensured_resource_and_is_a_minute_or_more() -> None:
    with pytest.raises(SpecValidationError, match="idle_timeout: only for an ensured resource"):
        PersistentResourceUse(resource=resource(), idle_timeout=3600)
    with pytest.raises(SpecValidationError, match=r"idle_timeout: must be at least 60s \(got 30s\)"):
        PersistentResourceUse(resource=resource(), ensure=True, idle_timeout=30)
    use = PersistentResourceUse(resource=resource(), ensure=True, idle_timeout="7200s")
    assert use.idle_timeout == timedelta(hours=2)


def test_a_job_that_fits_has_no_errors() -> None:
    assert fit_errors(job(workers=1), "gpus", resource().shapes) == []


def test_a_pool_of_another_machine_names_the_field_and_the_resource_pools() -> None:
    spec = DistributedTrainingJob(display_name="x", primary=pool(L4))
    [error] = fit_errors(spec, "gpus", resource().shapes)
    assert error.startswith("primary.machine: g2-standard-8 1xNVIDIA_L4 with a pd-ssd boot disk matches no ")
    assert "persistent resource 'gpus'" in error and "2x a2-highgpu-1g 1xNVIDIA_TESLA_A100 pd-ssd" in error


def test_the_disk_type_must_be_equal_too() -> None:
    spec = DistributedTrainingJob(display_name="x", primary=pool(disk=Disk(boot_disk_type="pd-standard")))
    [error] = fit_errors(spec, "gpus", resource().shapes)
    assert error.startswith("primary.machine: a2-highgpu-1g 1xNVIDIA_TESLA_A100 with a pd-standard boot disk")


def test_pools_on_one_resource_pool_add_their_replicas() -> None:
    [error] = fit_errors(job(workers=2), "gpus", resource().shapes)
    assert error == (
        "workers.replica_count: primary 1 + workers 2 = 3 replicas on resource pool 0 of persistent resource "
        "'gpus', above its replica_count (2); ask for fewer replicas, or give the pool more"
    )


def test_an_autoscaling_pool_holds_up_to_its_max() -> None:
    shapes = resource(ResourcePool(id="a", machine=A100, replica_count=1, max_replica_count=3)).shapes
    assert fit_errors(job(workers=2), "gpus", shapes) == []
    [error] = fit_errors(job(workers=3), "gpus", shapes)
    assert "on resource pool a of persistent resource 'gpus', above its max_replica_count (3)" in error


def test_a_reduction_server_needs_a_pool_of_its_own() -> None:
    spec = job(workers=1, reduction_server=ReductionServer(replica_count=2))
    [error] = fit_errors(spec, "gpus", resource().shapes)
    assert error.startswith("reduction_server.machine: n1-highcpu-16 with a pd-ssd boot disk matches no")
    both = resource(
        ResourcePool(machine=A100, replica_count=2),
        ResourcePool(machine=Machine(machine_type="n1-highcpu-16")),
    )
    [error] = fit_errors(spec, "gpus", both.shapes)
    assert error.startswith("reduction_server.replica_count: 2 replicas on resource pool 1 of persistent")
    assert "above its replica_count (1)" in error
    both = resource(
        ResourcePool(machine=A100, replica_count=2),
        ResourcePool(machine=Machine(machine_type="n1-highcpu-16"), replica_count=2),
    )
    assert fit_errors(spec, "gpus", both.shapes) == []


def test_a_rung_on_a_resource_sets_the_job_and_is_checked_when_planned() -> None:
    use = PersistentResourceUse(resource=resource(), ensure=True, idle_timeout=3600)
    ladder = CapacityLadder(rungs=(Rung(name="reserved", persistent_resource=use), Rung(name="on-demand")))
    first, second = plan_ladder(job(workers=1), ladder, location="us-central1")
    assert first.spec.to_api()["jobSpec"]["persistentResourceId"] == "gpus"
    assert "persistentResourceId" not in second.spec.to_api()["jobSpec"]
    with pytest.raises(LadderError) as info:
        plan_ladder(job(workers=2), ladder, location="us-central1")
    assert str(info.value).startswith(
        "capacity.rungs[0] (reserved).persistent_resource: the job does not fit the resource:\n"
        "  workers.replica_count: primary 1 + workers 2 = 3 replicas"
    )


def test_a_tuning_job_is_checked_on_its_trial_job() -> None:
    spec = HyperparameterTuningJob(
        display_name="t",
        trial_job=DistributedTrainingJob(display_name="trial", primary=pool(L4)),
        study=Study(
            metrics=(Metric(metric_id="loss", goal="MINIMIZE"),),
            parameters=(IntegerParameter(parameter_id="n", min_value=1, max_value=2),),
        ),
        max_trial_count=2,
        parallel_trial_count=1,
    )
    ladder = CapacityLadder(rungs=(Rung(persistent_resource=PersistentResourceUse(resource=resource())),))
    with pytest.raises(
        LadderError, match=r"capacity.rungs\[0\].persistent_resource: .*\n  primary.machine: g2-standard-8"
    ):
        plan_ladder(spec, ladder, location="us-central1")


API_RESOURCE = {
    "name": "projects/p/locations/us-central1/persistentResources/gpus",
    "resourcePools": [
        {
            "id": "pool-0",
            "machineSpec": {
                "machineType": "a2-highgpu-1g",
                "acceleratorType": "NVIDIA_TESLA_A100",
                "acceleratorCount": 1,
            },
            "replicaCount": "2",
            "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
        }
    ],
    "state": "RUNNING",
}


def test_a_real_resource_is_read_from_its_json_and_compared() -> None:
    [shape] = pool_shapes(API_RESOURCE)
    assert (shape.pool_id, shape.replica_count, shape.capacity) == ("pool-0", 2, 2)
    assert (
        shape_difference(resource().shapes, pool_shapes(API_RESOURCE)) is None
    )  # the service named the pool
    named = resource(ResourcePool(id="a100", machine=A100, replica_count=2))
    assert shape_difference(named.shapes, pool_shapes(API_RESOURCE)) is not None
    bigger = resource(ResourcePool(machine=A100, replica_count=3))
    assert shape_difference(bigger.shapes, pool_shapes(API_RESOURCE)) == (
        "pools[0] (3x a2-highgpu-1g 1xNVIDIA_TESLA_A100 pd-ssd) has no equal pool in the resource "
        "(its pools: pool-0: 2x a2-highgpu-1g 1xNVIDIA_TESLA_A100 pd-ssd)"
    )
    more = resource(ResourcePool(machine=A100, replica_count=2), ResourcePool(machine=CPU))
    assert "pools[1]" in (shape_difference(more.shapes, pool_shapes(API_RESOURCE)) or "")
    assert shape_difference((), pool_shapes(API_RESOURCE)) == (
        "the resource has pools the spec does not declare: "
        "pool-0: 2x a2-highgpu-1g 1xNVIDIA_TESLA_A100 pd-ssd"
    )
