"""The spec models check machines, boot disks and locations against the machine catalog
(``airflow_vertex_dist.specs.catalog``): what the bad-spec table cannot show (valid combinations, the
accelerator-region rule, tuning jobs, ``from_api``)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from airflow_vertex_dist.specs import (
    Disk,
    DistributedTrainingJob,
    HyperparameterTuningJob,
    Machine,
    ReductionServer,
    catalog,
    error_lines,
)

from .bad_job_cases import IMG, job_base, tuning_base


def gpu(machine_type: str, accelerator_type: str, count: int) -> dict[str, Any]:
    return {"machine_type": machine_type, "accelerator_type": accelerator_type, "accelerator_count": count}


@pytest.mark.parametrize(
    "machine",
    [
        {"machine_type": "n1-standard-4"},
        gpu("n1-standard-4", "NVIDIA_TESLA_T4", 4),
        gpu("n1-highmem-2", "NVIDIA_TESLA_V100", 1),
        gpu("n1-standard-32", "NVIDIA_TESLA_P100", 2),
        {"machine_type": "e2-highmem-16"},
        {"machine_type": "m1-ultramem-40"},
        gpu("a2-ultragpu-8g", "NVIDIA_A100_80GB", 8),
        gpu("a3-megagpu-8g", "NVIDIA_H100_MEGA_80GB", 8),
        gpu("a4-highgpu-8g", "NVIDIA_B200", 8),
        gpu("g2-standard-96", "NVIDIA_L4", 8),
        gpu("cloud-tpu", "TPU_V2", 8),
        {"machine_type": "ct5lp-hightpu-8t", "tpu_topology": "2x4"},
    ],
    ids=lambda m: f"{m['machine_type']}-{m.get('accelerator_count', 0)}",
)
def test_every_kind_of_valid_machine_builds(machine: dict[str, Any]) -> None:
    assert Machine.model_validate(machine).machine_type == machine["machine_type"]


def test_every_n1_count_of_the_catalog_builds_and_no_other_does() -> None:
    """The model follows the catalog's table exactly, for every N1 machine, GPU and count 1..16."""
    for machine_type, takes in catalog.ATTACHABLE.items():
        for gpu in ("NVIDIA_TESLA_T4", "NVIDIA_TESLA_P4", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100"):
            for count in range(1, 17):
                data = {"machine_type": machine_type, "accelerator_type": gpu, "accelerator_count": count}
                if count in takes.get(gpu, ()):
                    Machine.model_validate(data)
                else:
                    with pytest.raises(ValidationError):
                        Machine.model_validate(data)


def test_a_refused_machine_is_refused_by_from_api_too() -> None:
    """The service's own rules: a v1 body (``from_api``, the server context) is held to them as well."""
    body = DistributedTrainingJob.model_validate(job_base()).to_api()
    body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"] = "n1-standrad-4"
    with pytest.raises(ValidationError) as info:
        DistributedTrainingJob.from_api(body)
    assert "did you mean n1-standard-4?" in str(info.value)


def test_a3_ultra_builds_with_its_hyperdisk() -> None:
    pool = {
        "machine": gpu("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8),
        "disk": {"boot_disk_type": "hyperdisk-balanced"},
        "container": {"image_uri": IMG},
    }
    job = DistributedTrainingJob.model_validate({"display_name": "j", "primary": pool})
    assert job.to_api()["jobSpec"]["workerPoolSpecs"][0]["diskSpec"]["bootDiskType"] == "hyperdisk-balanced"


def test_a_pool_that_sets_no_boot_disk_type_gets_its_series_default() -> None:
    """The v1 ``DiskSpec``: hyperdisk-balanced is the default on A3 Ultra (which takes nothing else),
    pd-ssd elsewhere; from a model, a dict, or a v1 body that leaves the disk (or its type) out."""
    ultra = {"machine": gpu("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8), "container": {"image_uri": IMG}}
    job = DistributedTrainingJob.model_validate({"display_name": "j", "primary": ultra})
    pool = job.to_api()["jobSpec"]["workerPoolSpecs"][0]
    assert pool["diskSpec"] == {"bootDiskType": "hyperdisk-balanced", "bootDiskSizeGb": 100}
    body = job.to_api()
    body["jobSpec"]["workerPoolSpecs"][0]["diskSpec"] = {"bootDiskSizeGb": "200"}
    read = DistributedTrainingJob.from_api(body).to_api()["jobSpec"]["workerPoolSpecs"][0]["diskSpec"]
    assert read == {"bootDiskType": "hyperdisk-balanced", "bootDiskSizeGb": 200}
    plain = DistributedTrainingJob.model_validate(job_base()).to_api()["jobSpec"]["workerPoolSpecs"][0]
    assert plain["diskSpec"]["bootDiskType"] == "pd-ssd"
    with pytest.raises(ValidationError, match="does not take boot disk type pd-ssd"):
        DistributedTrainingJob.model_validate(
            {"display_name": "j", "primary": {**ultra, "disk": {"boot_disk_type": "pd-ssd"}}}
        )


def test_disk_alone_takes_each_type_the_protos_list() -> None:
    types = list(catalog.BOOT_DISK_TYPES)
    assert [Disk(boot_disk_type=t).boot_disk_type for t in types] == types


def test_reducers_run_on_catalog_machines() -> None:
    assert ReductionServer(machine_type="n2-highcpu-32").machine_type == "n2-highcpu-32"
    with pytest.raises(ValidationError, match="did you mean n2-highcpu-32"):
        ReductionServer(machine_type="n2-highcpu-23")


@pytest.mark.parametrize("location", ["us-central1", "europe-west4", "asia-southeast1", "me-central2"])
def test_a_region_of_custom_training_is_a_location(location: str) -> None:
    assert DistributedTrainingJob.model_validate({**job_base(), "location": location}).location == location


def test_a_tuning_job_checks_its_location() -> None:
    with pytest.raises(ValidationError) as info:
        HyperparameterTuningJob.model_validate({**tuning_base(), "location": "europe-west99"})
    lines = error_lines(info.value)
    assert any(line.startswith("location: 'europe-west99' is not a Vertex AI region") for line in lines)


def test_an_accelerator_is_checked_against_the_regions_that_offer_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """No region list of an accelerator could be read offline (the catalog's table is empty), so the rule
    is shown on a table given here: a listed region passes, another is refused naming the pool."""
    assert catalog.ACCELERATOR_REGIONS == {}
    DistributedTrainingJob.model_validate({**job_base(), "location": "asia-east1"})
    offered = frozenset({"us-central1", "europe-west4"})
    monkeypatch.setitem(catalog.ACCELERATOR_REGIONS, "NVIDIA_TESLA_V100", offered)
    DistributedTrainingJob.model_validate({**job_base(), "location": "europe-west4"})
    DistributedTrainingJob.model_validate(job_base())  # no location: nothing to check
    with pytest.raises(ValidationError) as info:
        DistributedTrainingJob.model_validate({**job_base(), "location": "asia-east1"})
    assert error_lines(info.value) == [
        "primary.machine.accelerator_type: NVIDIA_TESLA_V100 is not offered for training in asia-east1 "
        "(it is in europe-west4, us-central1); use one of those regions, or another accelerator"
    ]
    tuning = tuning_base()
    tuning["trial_job"]["primary"]["machine"] = job_base()["primary"]["machine"]
    with pytest.raises(ValidationError) as info:
        HyperparameterTuningJob.model_validate({**tuning, "location": "asia-east1"})
    assert error_lines(info.value)[0].startswith(
        "trial_job.primary.machine.accelerator_type: NVIDIA_TESLA_V100 is not offered for training in "
        "asia-east1"
    )
