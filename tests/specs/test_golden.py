"""Golden renders: exact request bodies of the examples, byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airflow_vertex_dist.specs import (
    DistributedTrainingJob,
    HyperparameterTuningJob,
    ReductionServer,
    WorkerPool,
    reduction_server_image,
)
from airflow_vertex_dist.specs.examples import (
    A2_MEGAGPU_REDUCTION_SERVER,
    EVALUATOR_EXAMPLE,
    PARAMETER_SERVER_EXAMPLE,
    SEED_REDUCTION_SERVER,
    TUNING_EXAMPLE,
)

from ._helpers import canonical, parse_proto, pool

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "seed_reduction_server": SEED_REDUCTION_SERVER,
    "a2_megagpu_reduction_server": A2_MEGAGPU_REDUCTION_SERVER,
    "parameter_servers": PARAMETER_SERVER_EXAMPLE,
    "evaluator": EVALUATOR_EXAMPLE,
    "tuning": TUNING_EXAMPLE,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_render(name: str) -> None:
    spec = CASES[name]
    path = GOLDEN / f"{name}.json"
    rendered = canonical(spec.to_api())
    if os.environ.get("AVD_UPDATE_GOLDEN") == "1":  # regenerate deliberately, then review the diff
        path.write_text(rendered, encoding="utf-8")
    assert rendered == path.read_text(encoding="utf-8")
    # Every golden parses as the v1 proto with no unknown field.
    parse_proto(spec.to_api(), tuning=isinstance(spec, HyperparameterTuningJob))


def test_render_is_deterministic() -> None:
    for spec in CASES.values():
        again = type(spec).model_validate(spec.model_dump())
        assert canonical(again.to_api()) == canonical(spec.to_api())


def test_seed_example_has_reducers_at_index_2() -> None:
    pools = SEED_REDUCTION_SERVER.to_api()["jobSpec"]["workerPoolSpecs"]
    assert len(pools) == 3
    assert [p["replicaCount"] for p in pools] == [1, 4, 16]
    reducers = pools[2]
    assert reducers == {
        "machineSpec": {"machineType": "n1-highcpu-16"},
        "replicaCount": 16,
        "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
        "containerSpec": {
            "imageUri": "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
        },
    }
    for p in pools[:2]:
        assert p["machineSpec"] == {
            "machineType": "n1-highmem-96",
            "acceleratorType": "NVIDIA_TESLA_V100",
            "acceleratorCount": 8,
        }


def test_auto_sizes_seed_to_16_and_a2_to_25() -> None:
    assert SEED_REDUCTION_SERVER.reducer_count == 16
    sizing = SEED_REDUCTION_SERVER.reducer_sizing()
    assert (sizing.training_gbps, sizing.reducer_gbps, sizing.needed) == (500, 32, 16)
    assert A2_MEGAGPU_REDUCTION_SERVER.reducer_count == 25
    assert A2_MEGAGPU_REDUCTION_SERVER.to_api()["jobSpec"]["workerPoolSpecs"][2]["replicaCount"] == 25


def test_skipped_pools_are_empty_objects_and_trailing_ones_dropped() -> None:
    ps = PARAMETER_SERVER_EXAMPLE.to_api()["jobSpec"]["workerPoolSpecs"]
    assert len(ps) == 3 and ps[1] == {} and ps[2]["replicaCount"] == 2
    ev = EVALUATOR_EXAMPLE.to_api()["jobSpec"]["workerPoolSpecs"]
    assert (
        len(ev) == 4 and ev[1] == {} and ev[2] == {} and ev[3]["containerSpec"]["args"] == ["--mode=evaluate"]
    )
    alone = DistributedTrainingJob(display_name="one", primary=pool())
    assert len(alone.to_api()["jobSpec"]["workerPoolSpecs"]) == 1
    with_workers = alone.model_copy(update={"workers": pool(replicas=3)})
    assert len(with_workers.to_api()["jobSpec"]["workerPoolSpecs"]) == 2


@pytest.mark.parametrize(
    ("location", "region"),
    [
        ("us-central1", "us"),
        ("northamerica-northeast1", "us"),
        ("southamerica-east1", "us"),
        ("europe-west4", "europe"),
        ("me-west1", "europe"),
        ("asia-northeast1", "asia"),
        ("australia-southeast1", "asia"),
        (None, "us"),
    ],
)
def test_reducer_image_follows_location(location: str | None, region: str) -> None:
    image = f"{region}-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    assert reduction_server_image(location) == image
    body = SEED_REDUCTION_SERVER.to_api(location=location)
    assert body["jobSpec"]["workerPoolSpecs"][2]["containerSpec"] == {"imageUri": image}
    located = DistributedTrainingJob.model_validate({**dict(SEED_REDUCTION_SERVER), "location": location})
    assert located.to_api()["jobSpec"]["workerPoolSpecs"][2]["containerSpec"] == {"imageUri": image}


def test_to_api_location_overrides_spec_location() -> None:
    spec = DistributedTrainingJob.model_validate({**dict(SEED_REDUCTION_SERVER), "location": "europe-west4"})
    image = spec.to_api(location="asia-east1")["jobSpec"]["workerPoolSpecs"][2]["containerSpec"]["imageUri"]
    assert image.startswith("asia-docker.pkg.dev/")


def test_workers_like_primary() -> None:
    primary = SEED_REDUCTION_SERVER.primary
    workers = WorkerPool.like(primary, replica_count=4)
    assert workers.machine == primary.machine and workers.container == primary.container
    assert workers.replica_count == 4
    bigger = WorkerPool.like(primary, replica_count=2, disk={"boot_disk_size_gb": 500})
    assert bigger.disk.boot_disk_size_gb == 500 and bigger.machine == primary.machine


def test_explicit_reducer_count_renders_as_given() -> None:
    spec = DistributedTrainingJob(
        display_name="x",
        primary=SEED_REDUCTION_SERVER.primary,
        workers=SEED_REDUCTION_SERVER.workers,
        reduction_server=ReductionServer(replica_count=20, machine_type="n2-highcpu-32"),
    )
    reducers = spec.to_api()["jobSpec"]["workerPoolSpecs"][2]
    assert reducers["replicaCount"] == 20 and reducers["machineSpec"] == {"machineType": "n2-highcpu-32"}
