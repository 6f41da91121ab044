"""The emulator's rules for machines, boot disks and locations, from its own copy of the machine catalog
(``vertex_emulator._generated.catalog``, generated from ``catalog/vertex_catalog.json``; never from the
provider's specs).

Inputs are the v1 JSON forms ``json_format.MessageToDict`` writes (camelCase names, enum names, fields at
their proto3 default left out): a ``MachineSpec`` (``{"machineType": ..., "acceleratorType": ...,
"acceleratorCount": ...}``) and a ``DiskSpec`` (``{"bootDiskType": ..., "bootDiskSizeGb": ...}``).
Each problem is one string, ``"<field path>: <message>"``, the path under the caller's ``path`` in the
request's snake_case names, the message in the service's wording where it is known (``MESSAGES`` says
which wording was seen in the service's answers and which is modelled on them).

Every rule and its source: ``MACHINE_RULES``. The catalog's data cites its own sources
(``catalog.SOURCES``); where the catalog could not be verified offline its rules lean permissive.
"""

from __future__ import annotations

from typing import Any

from vertex_emulator._generated import catalog

__all__ = ["MACHINE_RULES", "MESSAGES", "disk_problems", "location_problems", "machine_problems"]

#: The service's error texts. "seen": quoted from the service's answers in user reports (the source
#: given); "modelled": not seen offline, written in the form of the seen ones.
MESSAGES: dict[str, tuple[str, str]] = {
    # Seen: 'InvalidArgument: 400 Accelerator "NVIDIA_TESLA_K80" is not supported for machine type
    # "n1-standard-4"' (GoogleCloudPlatform/vertex-ai-samples issue 213, 2022;
    # GoogleCloudPlatform/python-docs-samples issue 13233, 2025).
    "accelerator": ('Accelerator "{acc}" is not supported for machine type "{machine}"', "seen"),
    # Seen: "1.Field: job_spec.worker_pool_specs[0].machine_spec.accelerator_type; Message: Both
    # `accelerator_type` and `accelerator_count` should be specified or none." (PrefectHQ/prefect-gcp
    # issue 175, 2023).
    "both-or-none": ("Both `accelerator_type` and `accelerator_count` should be specified or none.", "seen"),
    "machine-type": ('Machine type "{machine}" is not supported.', "modelled"),
    "count": (
        'Accelerator count {count} is not supported for accelerator "{acc}" and machine type "{machine}". '
        "Supported counts: {counts}.",
        "modelled",
    ),
    "built-in": (
        'Machine type "{machine}" requires accelerator type "{acc}" and accelerator count {count}.',
        "modelled",
    ),
    "no-accelerators": ('Machine type "{machine}" does not support accelerators.', "modelled"),
    "region": ('Accelerator "{acc}" is not supported in region "{region}".', "modelled"),
    "disk-type": ('Boot disk type "{disk}" is not supported. Supported types: {types}.', "modelled"),
    "disk-machine": ('Boot disk type "{disk}" is not supported for machine type "{machine}".', "modelled"),
    "disk-size": (
        "Boot disk size {size} GB is not supported. It must be between {low} and {high} GB.",
        "modelled",
    ),
    "location": ('Location "{location}" is not supported for custom training.', "modelled"),
    "topology": ('TPU topology is only supported for TPU machine types, not "{machine}".', "modelled"),
    "topology-machine": (
        'TPU topology "{topology}" is not supported for machine type "{machine}". '
        "Supported topologies: {tops}.",
        "modelled",
    ),
    "partition": ("accelerator_count must be 1 when gpu_partition_size is set.", "modelled"),
}

_PROTO = "v1 proto comment"
_CC = catalog.SOURCES["configure-compute"][1]
#: (rule id, what it refuses, source): every rule of this module.
MACHINE_RULES: tuple[tuple[str, str, str], ...] = (
    ("machine-type", "a machine type custom training does not offer", f"{_CC}; catalog series sources"),
    (
        "accelerator-both",
        "accelerator_type without a count, or a count without a type",
        "the service's answer quoted in PrefectHQ/prefect-gcp issue 175",
    ),
    (
        "accelerator-machine",
        "a GPU the machine type does not take (a T4 on E2, an A100 80GB on N1, a K80 anywhere)",
        f"{_CC}; {catalog.SOURCES['ce-gpus'][1]}; {catalog.SOURCES['k80-eol'][1]}",
    ),
    ("accelerator-count", "a GPU count the N1 machine type does not take", catalog.SOURCES["ce-gpus"][1]),
    (
        "built-in",
        "an A2/A3/A4/G2 machine type without its own GPUs named, or with another type or count",
        f"{_CC}; {catalog.SOURCES['ce-accelerator-optimized'][1]}",
    ),
    ("tpu", "cloud-tpu without TPU_V2/TPU_V3; a TPU VM type with another TPU or chip count", _CC),
    (
        "tpu-count",
        "cloud-tpu with a TPU_V2 count other than 8, 32 or a multiple of 32, or a TPU_V3 count other than 8 "
        "or 32 and more (the page: '32+')",
        f"{_CC} (TPU v2 and v3, read 2026-12-07)",
    ),
    ("accelerator-region", "an accelerator the region does not offer (no region list known yet)", _CC),
    ("tpu-topology", "tpu_topology on a machine type that is not a TPU one", f"{_PROTO} MachineSpec"),
    (
        "tpu-topology-machine",
        "a tpu_topology that the page's TPU tables do not give the TPU VM machine type (ct5lp-hightpu-8t "
        "takes 2x4 only; tpu7x-standard-4t takes 2x2x1 ... 8x8x16)",
        f"{_CC} (TPU v5e, TPU v6e, TPU 7x, read 2026-12-07)",
    ),
    (
        "gpu-partition",
        "gpu_partition_size with accelerator_count other than 1",
        f'{_PROTO} MachineSpec.gpu_partition_size ("If set, the accelerator_count should be set to 1.")',
    ),
    ("boot-disk-type", "a boot disk type not pd-ssd, pd-standard, hyperdisk-balanced", f"{_PROTO} DiskSpec"),
    (
        "boot-disk-machine",
        "a boot disk type the machine series does not take (hyperdisk-balanced on N1; pd-ssd on A3 Ultra)",
        f"{_PROTO} DiskSpec (A3U defaults to hyperdisk-balanced); {catalog.SOURCES['ce-hyperdisk'][1]}",
    ),
    ("boot-disk-size", "a boot disk size outside [100, 64000] GB (0: the default)", f"{_PROTO} DiskSpec"),
    ("location", "a location that is not a Vertex AI region", catalog.SOURCES["sdk-regions"][1]),
)


def _say(key: str, **values: Any) -> str:
    return MESSAGES[key][0].format(**values)


def _count(spec: dict[str, Any]) -> int:
    value = spec.get("acceleratorCount", 0)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _accelerator(spec: dict[str, Any]) -> str | None:
    value = spec.get("acceleratorType")
    return None if value in (None, "", "ACCELERATOR_TYPE_UNSPECIFIED") else str(value)


def machine_problems(machine_spec: dict[str, Any], location: str, path: str) -> list[str]:
    """The problems of one pool's ``MachineSpec`` (v1 JSON form) for a job in ``location``; ``path``
    names the machine spec (``job_spec.worker_pool_specs[0].machine_spec``)."""
    machine = str(machine_spec.get("machineType", ""))
    acc, count = _accelerator(machine_spec), _count(machine_spec)
    out: list[str] = []
    if not machine:
        return out  # "Required field is not set." is the required-fields rule's
    if (acc is None) != (count == 0):
        out.append(f"{path}.accelerator_type: {_say('both-or-none')}")
        return out
    if machine not in catalog.MACHINE_SERIES:
        out.append(f"{path}.machine_type: {_say('machine-type', machine=machine)}")
        return out
    out.extend(_accelerator_problems(machine, acc, count, path))
    offered = catalog.ACCELERATOR_REGIONS.get(acc or "")
    if acc is not None and offered is not None and location not in offered:
        out.append(f"{path}.accelerator_type: {_say('region', acc=acc, region=location)}")
    topology = str(machine_spec.get("tpuTopology", ""))
    if topology and machine not in catalog.TPU_MACHINES:
        out.append(f"{path}.tpu_topology: {_say('topology', machine=machine)}")
    tops = catalog.TPU_TOPOLOGIES.get(machine)
    if topology and tops is not None and topology not in tops:
        text = _say("topology-machine", topology=topology, machine=machine, tops=", ".join(tops))
        out.append(f"{path}.tpu_topology: {text}")
    if machine_spec.get("gpuPartitionSize") and count != 1:
        out.append(f"{path}.accelerator_count: {_say('partition')}")
    return out


def _accelerator_problems(machine: str, acc: str | None, count: int, path: str) -> list[str]:
    if machine in catalog.BUILT_IN:
        gpu, gpus = catalog.BUILT_IN[machine]
        if acc != gpu or count != gpus:
            field = "accelerator_type" if acc != gpu else "accelerator_count"
            return [f"{path}.{field}: {_say('built-in', machine=machine, acc=gpu, count=gpus)}"]
        return []
    if machine in catalog.TPU_MACHINES:
        tpus, chips, required = catalog.TPU_MACHINES[machine]
        if acc is None and not required:
            return []
        if not tpus:  # the v1 AcceleratorType has no value for its TPU: the request names none
            return [f"{path}.accelerator_type: {_say('no-accelerators', machine=machine)}"]
        if acc not in tpus:
            text = _say("built-in", machine=machine, acc=" or ".join(tpus), count=chips)
            return [f"{path}.accelerator_type: {text}"]
        if acc in catalog.CLOUD_TPU_COUNTS:
            return _cloud_tpu_count_problems(machine, acc, count, path)
        if count != chips:
            return [f"{path}.accelerator_count: {_say('built-in', machine=machine, acc=acc, count=chips)}"]
        return []
    if acc is None:
        return []
    takes = catalog.ATTACHABLE.get(machine)
    if takes is None:
        return [f"{path}.accelerator_type: {_say('no-accelerators', machine=machine)}"]
    if acc not in takes:
        return [f"{path}.accelerator_type: {_say('accelerator', acc=acc, machine=machine)}"]
    if count not in takes[acc]:
        counts = ", ".join(str(c) for c in takes[acc])
        text = _say("count", count=count, acc=acc, machine=machine, counts=counts)
        return [f"{path}.accelerator_count: {text}"]
    return []


def _cloud_tpu_count_problems(machine: str, acc: str, count: int, path: str) -> list[str]:
    """``cloud-tpu``'s TPU v2 and v3 counts (``tpu-count``): a single TPU's, or a TPU Pod's."""
    single, low, step = catalog.CLOUD_TPU_COUNTS[acc]
    if count == single or (count >= low and (count - low) % step == 0):
        return []
    pods = f"{low} or a multiple of {step}" if step == low else f"{low} or more"
    counts = f"{single} (a single TPU), {pods} (a TPU Pod)"
    text = _say("count", count=count, acc=acc, machine=machine, counts=counts)
    return [f"{path}.accelerator_count: {text}"]


def disk_problems(disk_spec: dict[str, Any], path: str, machine_type: str = "") -> list[str]:
    """The problems of one pool's ``DiskSpec`` (v1 JSON form); with ``machine_type``, also whether that
    machine's series takes the boot disk type (an unset type is the series' default)."""
    out: list[str] = []
    disk = str(disk_spec.get("bootDiskType", ""))
    series = catalog.MACHINE_SERIES.get(machine_type)
    if disk and disk not in catalog.BOOT_DISK_TYPES:
        types = ", ".join(catalog.BOOT_DISK_TYPES)
        out.append(f"{path}.boot_disk_type: {_say('disk-type', disk=disk, types=types)}")
    elif series is not None:
        effective = disk or catalog.SERIES_BOOT_DISK_DEFAULT.get(series, catalog.DEFAULT_BOOT_DISK_TYPE)
        if effective not in catalog.SERIES_BOOT_DISK_TYPES[series]:
            out.append(f"{path}.boot_disk_type: {_say('disk-machine', disk=effective, machine=machine_type)}")
    try:
        size = int(disk_spec.get("bootDiskSizeGb", 0))
    except (TypeError, ValueError):
        size = -1
    low, high = catalog.BOOT_DISK_SIZE_GB
    if size != 0 and not low <= size <= high:  # 0: unset, the default 100 GB
        out.append(f"{path}.boot_disk_size_gb: {_say('disk-size', size=size, low=low, high=high)}")
    return out


def location_problems(location: str) -> list[str]:
    """The problem of a job's location (the Create request's ``parent``) that is not a Vertex AI region
    of custom training; ``[]`` for one that is."""
    if location in catalog.REGIONS:
        return []
    return [f"parent: {_say('location', location=location)}"]
