"""Our pools equal those of the google-cloud-aiplatform SDK's own worker-pool builder."""

from __future__ import annotations

import re
from typing import Any

import pytest

from airflow_vertex_dist.specs import (
    Container,
    Disk,
    DistributedTrainingJob,
    Machine,
    ReductionServer,
    ReservationAffinity,
    WorkerPool,
)

IMAGE = "example.com/ml/trainer:1.0"
RS_IMAGE = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _sdk_pools(**kwargs: Any) -> list[dict[str, Any]]:
    """What the SDK's CustomJob/CustomContainerTrainingJob sends: the builder's pools plus the
    container spec it adds (the training image, and the reducer image on pool 2)."""
    from google.cloud.aiplatform.utils import worker_spec_utils

    pools: list[dict[str, Any]] = worker_spec_utils._DistributedTrainingSpec.chief_worker_pool(
        **kwargs
    ).pool_specs
    for index, spec in enumerate(pools):
        if spec:
            spec["container_spec"] = {"image_uri": RS_IMAGE if index == 2 else IMAGE}
    return list(_camel(pools))


CASES: list[dict[str, Any]] = [
    {"replica_count": 1, "machine_type": "n1-standard-4"},
    {
        "replica_count": 3,
        "machine_type": "n1-standard-8",
        "boot_disk_type": "pd-standard",
        "boot_disk_size_gb": 200,
    },
    {
        "replica_count": 5,
        "machine_type": "n1-highmem-96",
        "accelerator_type": "NVIDIA_TESLA_V100",
        "accelerator_count": 8,
        "reduction_server_replica_count": 16,
        "reduction_server_machine_type": "n1-highcpu-16",
    },
    {
        "replica_count": 8,
        "machine_type": "a2-megagpu-16g",
        "accelerator_type": "NVIDIA_TESLA_A100",
        "accelerator_count": 16,
        "reduction_server_replica_count": 25,
        "reduction_server_machine_type": "n1-highcpu-16",
    },
    {
        "replica_count": 2,
        "machine_type": "g2-standard-8",
        "accelerator_type": "NVIDIA_L4",
        "accelerator_count": 1,
        "reservation_affinity_type": "SPECIFIC_RESERVATION",
        "reservation_affinity_key": "compute.googleapis.com/reservation-name",
        "reservation_affinity_values": ["projects/p/zones/us-central1-a/reservations/r"],
    },
    {
        "replica_count": 4,
        "machine_type": "n1-standard-16",
        "accelerator_type": "NVIDIA_TESLA_T4",
        "accelerator_count": 4,
        "reservation_affinity_type": "ANY_RESERVATION",
        "reduction_server_replica_count": 7,
        "reduction_server_machine_type": "n2-highcpu-16",
    },
]


def _ours(case: dict[str, Any]) -> DistributedTrainingJob:
    affinity = None
    if case.get("reservation_affinity_type"):
        affinity = ReservationAffinity(
            reservation_affinity_type=case["reservation_affinity_type"],
            key=case.get("reservation_affinity_key"),
            values=case.get("reservation_affinity_values") or (),
        )
    primary = WorkerPool(
        machine=Machine(
            machine_type=case["machine_type"],
            accelerator_type=case.get("accelerator_type"),
            accelerator_count=case.get("accelerator_count", 0),
            reservation_affinity=affinity,
        ),
        disk=Disk(
            boot_disk_type=case.get("boot_disk_type", "pd-ssd"),
            boot_disk_size_gb=case.get("boot_disk_size_gb", 100),
        ),
        container=Container(image_uri=IMAGE),
    )
    workers = None
    if case["replica_count"] > 1:
        workers = WorkerPool.like(primary, replica_count=case["replica_count"] - 1)
    reducers = None
    if case.get("reduction_server_replica_count"):
        reducers = ReductionServer(
            replica_count=case["reduction_server_replica_count"],
            machine_type=case["reduction_server_machine_type"],
            reservation_affinity=affinity,
        )
    return DistributedTrainingJob(
        display_name="sdk", primary=primary, workers=workers, reduction_server=reducers
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['machine_type']}x{c['replica_count']}")
def test_pools_equal_sdk_builder(case: dict[str, Any]) -> None:
    ours = _ours(case).worker_pool_specs(location="us-central1")
    assert ours == _sdk_pools(**case)


def test_sdk_comparison_is_sensitive() -> None:
    """The comparison notices a one-field difference (it is not vacuous)."""
    case = dict(CASES[2])
    ours = _ours(case).worker_pool_specs(location="us-central1")
    case["reduction_server_replica_count"] = 17
    assert ours != _sdk_pools(**case)
