"""The emulator's machine, boot disk and location rules (``vertex_emulator.rules.machines``), on the v1
JSON forms ``json_format.MessageToDict`` writes, with the service's wording where it is known."""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud.aiplatform_v1.types import DiskSpec, MachineSpec
from google.protobuf import json_format

from vertex_emulator._generated import catalog
from vertex_emulator.rules import machines

PATH = "job_spec.worker_pool_specs[0].machine_spec"
DISK = "job_spec.worker_pool_specs[0].disk_spec"


def as_dict(message: Any) -> dict[str, Any]:
    """What the caller hands the rules: the raw message as ``MessageToDict`` writes it."""
    out: dict[str, Any] = json_format.MessageToDict(type(message).pb(message))
    return out


def machine(**fields: Any) -> dict[str, Any]:
    return as_dict(MachineSpec(**fields))


def gpu(machine_type: str, accelerator_type: str, count: int) -> dict[str, Any]:
    return {"machine_type": machine_type, "accelerator_type": accelerator_type, "accelerator_count": count}


def problems(spec: dict[str, Any], location: str = "us-central1") -> list[str]:
    return machines.machine_problems(spec, location, PATH)


@pytest.mark.parametrize(
    "spec",
    [
        {"machine_type": "n1-standard-4"},
        gpu("n1-standard-4", "NVIDIA_TESLA_T4", 4),
        gpu("n1-highmem-96", "NVIDIA_TESLA_V100", 8),
        {"machine_type": "e2-standard-4"},
        {"machine_type": "n2-highcpu-16"},
        gpu("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1),
        gpu("a2-ultragpu-1g", "NVIDIA_A100_80GB", 1),
        gpu("a2-megagpu-16g", "NVIDIA_TESLA_A100", 16),
        gpu("g2-standard-48", "NVIDIA_L4", 4),
        gpu("a3-highgpu-8g", "NVIDIA_H100_80GB", 8),
        gpu("cloud-tpu", "TPU_V3", 8),
        {"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2x2"},
        {
            "machine_type": "ct5lp-hightpu-4t",
            "accelerator_type": "TPU_V5_LITEPOD",
            "accelerator_count": 4,
            "tpu_topology": "2x2",
        },
        {
            "machine_type": "a2-ultragpu-1g",
            "accelerator_type": "NVIDIA_A100_80GB",
            "accelerator_count": 1,
            "gpu_partition_size": "1g.10gb",
        },
    ],
    ids=lambda spec: "+".join(str(v) for v in spec.values()),
)
def test_a_valid_machine_has_no_problem(spec: dict[str, Any]) -> None:
    assert problems(machine(**spec)) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"machine_type": "n1-standrad-4"},
            f'{PATH}.machine_type: Machine type "n1-standrad-4" is not supported.',
        ),
        ({"machine_type": "n1-foo-7"}, f'{PATH}.machine_type: Machine type "n1-foo-7" is not supported.'),
        (
            gpu("n1-standard-4", "NVIDIA_A100_80GB", 1),
            f'{PATH}.accelerator_type: Accelerator "NVIDIA_A100_80GB" is not supported for machine type '
            '"n1-standard-4"',
        ),
        (
            gpu("e2-standard-4", "NVIDIA_TESLA_T4", 1),
            f'{PATH}.accelerator_type: Machine type "e2-standard-4" does not support accelerators.',
        ),
        (
            gpu("n1-standard-4", "NVIDIA_TESLA_K80", 1),
            f'{PATH}.accelerator_type: Accelerator "NVIDIA_TESLA_K80" is not supported for machine type '
            '"n1-standard-4"',
        ),
        (
            {"machine_type": "a2-highgpu-1g"},
            f'{PATH}.accelerator_type: Machine type "a2-highgpu-1g" requires accelerator type '
            '"NVIDIA_TESLA_A100" and accelerator count 1.',
        ),
        (
            gpu("a2-highgpu-1g", "NVIDIA_TESLA_A100", 2),
            f'{PATH}.accelerator_count: Machine type "a2-highgpu-1g" requires accelerator type '
            '"NVIDIA_TESLA_A100" and accelerator count 1.',
        ),
        (
            gpu("g2-standard-8", "NVIDIA_TESLA_T4", 1),
            f'{PATH}.accelerator_type: Machine type "g2-standard-8" requires accelerator type "NVIDIA_L4" '
            "and accelerator count 1.",
        ),
        (
            gpu("n1-highmem-96", "NVIDIA_TESLA_V100", 3),
            f"{PATH}.accelerator_count: Accelerator count 3 is not supported for accelerator "
            '"NVIDIA_TESLA_V100" and machine type "n1-highmem-96". Supported counts: 8.',
        ),
        (
            {"machine_type": "n1-standard-4", "accelerator_type": "NVIDIA_TESLA_T4"},
            f"{PATH}.accelerator_type: Both `accelerator_type` and `accelerator_count` should be specified "
            "or none.",
        ),
        (
            {"machine_type": "n1-standard-4", "accelerator_count": 2},
            f"{PATH}.accelerator_type: Both `accelerator_type` and `accelerator_count` should be specified "
            "or none.",
        ),
        (
            {"machine_type": "cloud-tpu"},
            f'{PATH}.accelerator_type: Machine type "cloud-tpu" requires accelerator type "TPU_V2 or TPU_V3" '
            "and accelerator count 8.",
        ),
        (
            gpu("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 8),
            f'{PATH}.accelerator_count: Machine type "ct5lp-hightpu-4t" requires accelerator type '
            '"TPU_V5_LITEPOD" and accelerator count 4.',
        ),
        (
            {"machine_type": "n1-standard-4", "tpu_topology": "2x2"},
            f"{PATH}.tpu_topology: TPU topology is only supported for TPU machine types, not "
            '"n1-standard-4".',
        ),
        (
            {
                "machine_type": "n1-standard-4",
                "accelerator_type": "NVIDIA_TESLA_T4",
                "accelerator_count": 2,
                "gpu_partition_size": "1g.5gb",
            },
            f"{PATH}.accelerator_count: accelerator_count must be 1 when gpu_partition_size is set.",
        ),
    ],
    ids=lambda value: value["machine_type"] if isinstance(value, dict) else "",
)
def test_a_refused_machine_names_the_field_in_the_services_words(spec: dict[str, Any], expected: str) -> None:
    assert problems(machine(**spec)) == [expected]


def test_an_unset_machine_type_is_left_to_the_required_rule() -> None:
    assert problems(machine()) == []


def test_an_accelerator_outside_its_regions_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """No region list could be read offline (the catalog's is empty), so the rule is shown on a table
    given here: with one, a region missing from it is refused and a listed one is not."""
    assert catalog.ACCELERATOR_REGIONS == {}
    spec = machine(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)
    assert problems(spec, "europe-west4") == []
    monkeypatch.setitem(catalog.ACCELERATOR_REGIONS, "NVIDIA_L4", frozenset({"us-central1"}))
    assert problems(spec, "us-central1") == []
    assert problems(spec, "europe-west4") == [
        f'{PATH}.accelerator_type: Accelerator "NVIDIA_L4" is not supported in region "europe-west4".'
    ]


@pytest.mark.parametrize(
    ("disk", "machine_type", "expected"),
    [
        ({}, "", []),
        ({"boot_disk_type": "pd-ssd", "boot_disk_size_gb": 100}, "n1-standard-4", []),
        ({"boot_disk_type": "pd-standard", "boot_disk_size_gb": 64000}, "", []),
        ({"boot_disk_type": "hyperdisk-balanced"}, "a3-ultragpu-8g", []),
        ({}, "a3-ultragpu-8g", []),  # unset: the A3 Ultra default, hyperdisk-balanced
        (
            {"boot_disk_type": "pd-balanced"},
            "",
            [
                f'{DISK}.boot_disk_type: Boot disk type "pd-balanced" is not supported. Supported types: '
                "pd-ssd, pd-standard, hyperdisk-balanced."
            ],
        ),
        (
            {"boot_disk_type": "hyperdisk-balanced"},
            "n1-standard-4",
            [f'{DISK}.boot_disk_type: Boot disk type "hyperdisk-balanced" is not supported for machine type '
             '"n1-standard-4".'],
        ),
        (
            {"boot_disk_type": "pd-ssd"},
            "a4-highgpu-8g",
            [f'{DISK}.boot_disk_type: Boot disk type "pd-ssd" is not supported for machine type '
             '"a4-highgpu-8g".'],
        ),
        (
            {"boot_disk_size_gb": 50},
            "",
            [f"{DISK}.boot_disk_size_gb: Boot disk size 50 GB is not supported. It must be between 100 and "
             "64000 GB."],
        ),
        (
            {"boot_disk_size_gb": 64001},
            "n1-standard-4",
            [f"{DISK}.boot_disk_size_gb: Boot disk size 64001 GB is not supported. It must be between 100 "
             "and 64000 GB."],
        ),
    ],
)
def test_disk_rules(disk: dict[str, Any], machine_type: str, expected: list[str]) -> None:
    assert machines.disk_problems(as_dict(DiskSpec(**disk)), DISK, machine_type=machine_type) == expected


def test_the_disk_rule_called_without_a_machine_type_checks_only_the_type_and_size() -> None:
    assert machines.disk_problems({"bootDiskType": "hyperdisk-balanced"}, DISK) == []


@pytest.mark.parametrize("location", ["us-central1", "europe-west4", "asia-east1", "me-central2"])
def test_a_vertex_region_is_a_location(location: str) -> None:
    assert machines.location_problems(location) == []


@pytest.mark.parametrize("location", ["us-central99", "global", "US-CENTRAL1", "", "l"])
def test_other_locations_are_refused(location: str) -> None:
    assert machines.location_problems(location) == [
        f'parent: Location "{location}" is not supported for custom training.'
    ]


def test_every_message_says_whether_it_was_seen_and_every_rule_has_a_source() -> None:
    assert {how for _, how in machines.MESSAGES.values()} <= {"seen", "modelled"}
    assert machines.MESSAGES["accelerator"][1] == machines.MESSAGES["both-or-none"][1] == "seen"
    ids = [rule_id for rule_id, _, _ in machines.MACHINE_RULES]
    assert len(ids) == len(set(ids))
    assert all(text and source for _, text, source in machines.MACHINE_RULES)


def test_the_rules_import_nothing_of_the_provider() -> None:
    import ast
    from pathlib import Path

    for module in (machines, catalog):
        tree = ast.parse(Path(str(module.__file__)).read_text())
        names = [
            n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
        ] + [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [n for n in names if n.startswith(("airflow", "airflow_vertex_dist"))], names


@pytest.mark.parametrize(
    ("machine_type", "topology", "problem"),
    [
        ("ct6e-standard-4t", "16x16", None),
        ("ct6e-standard-8t", "2x4", None),
        ("ct6e-standard-4t", "2x4", None),  # two VMs: the configure-compute page's table lists it
        ("ct6e-standard-4t", "2x4x1", "Supported topologies: 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16."),
        ("ct5lp-hightpu-8t", "2x2", "Supported topologies: 2x4."),
        ("tpu7x-standard-4t", "4x4x4", None),
        (
            "tpu7x-standard-4t",
            "4x4",
            "Supported topologies: 2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4, 4x4x8, 4x8x8, 8x8x8, 8x8x16.",
        ),
    ],
)
def test_a_tpu_topology_must_be_one_of_the_machine_types_slices(
    machine_type: str, topology: str, problem: str | None
) -> None:
    found = problems(machine(machine_type=machine_type, tpu_topology=topology))
    if problem is None:
        assert found == []
    else:
        assert found == [
            f'{PATH}.tpu_topology: TPU topology "{topology}" is not supported for machine type '
            f'"{machine_type}". {problem}'
        ]


def test_the_topology_tables_are_the_catalogs() -> None:
    assert catalog.TPU_TOPOLOGIES["ct6e-standard-4t"]["16x16"] == 64
    assert catalog.TPU_MACHINES["ct6e-standard-4t"] == ((), 4, False)
