"""The machine catalog's rules, as the spec models apply them: machine types, accelerators and their
counts, boot disks, regions (``_generated/catalog.py``, generated from ``catalog/vertex_catalog.json``, which
cites the source of every figure).

Each function returns the rule a value breaks, ``"<field>: <rule>; <what to do>"`` with the field named
relative to the model that applies it, or ``None`` when the value keeps every rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from airflow_vertex_dist._generated import catalog
from airflow_vertex_dist.specs.errors import did_you_mean

__all__ = [
    "boot_disk_type_rule",
    "cloud_tpu_count_rule",
    "cloud_tpu_counts",
    "default_boot_disk_type",
    "disk_rule",
    "location_rule",
    "machine_rule",
    "machine_type_rule",
    "offered_rule",
    "topology_rule",
]


def topology_rule(machine_type: str, topology: str) -> str | None:
    """A ``tpu_topology`` that Google's slice tables do not give the TPU VM machine type (a machine type
    without a topology table is not checked)."""
    tops = catalog.TPU_TOPOLOGIES.get(machine_type)
    if tops is None or topology in tops:
        return None
    listed = ", ".join(f"{t} ({n} VM{'s' if n > 1 else ''})" for t, n in tops.items())
    return (
        f"tpu_topology: {machine_type} takes the topologies {listed} in Google's TPU slice tables "
        f"(got {topology!r}); use one of them, or another TPU VM machine type"
    )


def _natural(name: str) -> tuple[object, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _example(acc: str, count: int | None = None) -> str | None:
    """A machine type that takes ``count`` (any count when ``None``) of accelerator ``acc``: a standard
    shape before the others, the smallest first."""
    found = [m for m, (gpu, n) in catalog.BUILT_IN.items() if gpu == acc and count in (None, n)]
    for name, takes in catalog.ATTACHABLE.items():
        if acc in takes and (count is None or count in takes[acc]):
            found.append(name)
    found += [m for m, (tpus, n, _) in catalog.TPU_MACHINES.items() if acc in tpus and count in (None, n)]
    found.sort(key=lambda m: ("standard" not in m, _natural(m)))
    return found[0] if found else None


def _or_example(acc: str, count: int | None = None, what: str = "a machine type for") -> str:
    example = _example(acc, count)
    wanted = f"{count} x {acc}" if count is not None else acc
    return f", or {what} {wanted} such as {example}" if example else ", or another machine type"


def machine_type_rule(machine_type: str) -> str | None:
    """A machine type that Vertex AI custom training does not offer (the name closest to a misspelt one)."""
    if machine_type in catalog.MACHINE_SERIES:
        return None
    close = did_you_mean(machine_type, catalog.MACHINE_SERIES)
    if close is not None:
        return (
            f"machine_type: {machine_type!r} is not a machine type of Vertex AI custom training "
            f"(did you mean {close}?); use {close!r}"
        )
    return (
        f"machine_type: {machine_type!r} is not a machine type of Vertex AI custom training; use one of "
        "airflow_vertex_dist.specs.catalog.MACHINE_SERIES, such as 'n1-standard-4'"
    )


def machine_rule(machine_type: str, acc: str | None, count: int) -> str | None:
    """The first catalog rule a machine breaks: its type, then the accelerators it takes and their count."""
    rule = machine_type_rule(machine_type)
    if rule is not None:
        return rule
    got = f"{acc} x{count}" if acc is not None else "none"
    if machine_type in catalog.BUILT_IN:
        gpu, gpus = catalog.BUILT_IN[machine_type]
        fix = f"set accelerator_type={gpu!r} and accelerator_count={gpus}"
        if acc is None:
            return (
                f"accelerator_type: {machine_type} comes with {gpus} x {gpu}, which the request names "
                f"(got none); {fix}"
            )
        if acc != gpu:
            head = f"accelerator_type: {machine_type} comes with {gpus} x {gpu} (got {got})"
            return f"{head}; {fix}{_or_example(acc)}"
        if count != gpus:
            return (
                f"accelerator_count: {machine_type} comes with {gpus} x {gpu} (got x{count}); set "
                f"accelerator_count={gpus}" + _or_example(gpu, count, "a machine type with")
            )
        return None
    if machine_type in catalog.TPU_MACHINES:
        return _tpu_rule(machine_type, acc, count, got)
    if acc is None:
        return None
    takes = catalog.ATTACHABLE.get(machine_type)
    if acc in catalog.END_OF_SUPPORT:
        return (
            f"accelerator_type: {acc} is past its end of support, and Vertex AI takes it on no machine type; "
            "use another GPU, such as NVIDIA_TESLA_T4"
        )
    if takes is None:
        return (
            f"accelerator_type: {machine_type} takes no accelerators (got {got}); drop accelerator_type"
            + _or_example(acc, None, "use a machine type for")
        )
    if acc not in takes:
        return (
            f"accelerator_type: {machine_type} does not take {acc} (it takes {', '.join(takes)}); use one of "
            "those" + _or_example(acc)
        )
    if count not in takes[acc]:
        counts = "/".join(str(c) for c in takes[acc])
        return (
            f"accelerator_count: {machine_type} takes {acc} x{counts} (got x{count}); use one of those counts"
            + _or_example(acc, count, "a machine type that takes")
        )
    return None


def boot_disk_type_rule(value: str) -> str | None:
    """A boot disk type that is not one of the v1 ``DiskSpec``'s."""
    if value in catalog.BOOT_DISK_TYPES:
        return None
    close = did_you_mean(value, catalog.BOOT_DISK_TYPES)
    hint = f" (did you mean {close}?)" if close else ""
    return (
        f"boot_disk_type: {value!r} is not a boot disk type of Vertex AI training{hint}; use one of "
        f"{', '.join(catalog.BOOT_DISK_TYPES)}"
    )


def default_boot_disk_type(machine_type: str) -> str:
    """The boot disk type the service gives a pool that sets none (v1 ``DiskSpec``: "pd-ssd", except
    "hyperdisk-balanced" on the series that take only it)."""
    series = catalog.MACHINE_SERIES.get(machine_type)
    return catalog.SERIES_BOOT_DISK_DEFAULT.get(series or "", catalog.DEFAULT_BOOT_DISK_TYPE)


def disk_rule(machine_type: str, boot_disk_type: str) -> str | None:
    """A boot disk type the machine type's series does not take (``disk.boot_disk_type`` of a pool)."""
    series = catalog.MACHINE_SERIES.get(machine_type)
    if series is None:
        return None
    types = catalog.SERIES_BOOT_DISK_TYPES[series]
    if boot_disk_type in types:
        return None
    return (
        f"disk.boot_disk_type: {machine_type} does not take boot disk type {boot_disk_type} (it takes "
        f"{', '.join(types)}); set disk=Disk(boot_disk_type={types[0]!r})"
    )


def location_rule(field: str, value: str) -> str | None:
    """A location that is not a region of Vertex AI custom training."""
    if value in catalog.REGIONS:
        return None
    close = did_you_mean(value, catalog.REGIONS)
    hint = f" (did you mean {close}?)" if close else ""
    return (
        f"{field}: {value!r} is not a Vertex AI region for custom training{hint}; use a region such as "
        f"{close or 'us-central1'!r}"
    )


def offered_rule(location: str | None, machines: Iterable[tuple[str, str | None]]) -> str | None:
    """An accelerator the location does not offer for training; ``machines`` are (field path, accelerator
    type) pairs. Accelerators the catalog has no region list for are not checked."""
    if location is None:
        return None
    for path, acc in machines:
        regions = catalog.ACCELERATOR_REGIONS.get(acc or "")
        if regions is not None and location not in regions:
            return (
                f"{path}: {acc} is not offered for training in {location} (it is in "
                f"{', '.join(sorted(regions))}); use one of those regions, or another accelerator"
            )
    return None


def _tpu_rule(machine_type: str, acc: str | None, count: int, got: str) -> str | None:
    """The rule a TPU machine type's accelerator fields break (``got`` says what was asked)."""
    tpus, chips, required = catalog.TPU_MACHINES[machine_type]
    if acc is None and not required:
        return None
    if not tpus:
        return (
            f"accelerator_type: {machine_type} has {chips} TPU chip(s) per VM, and the v1 "
            f"AcceleratorType has no value for them: the request names no accelerator (got {got}); drop "
            "accelerator_type and accelerator_count"
        )
    if acc not in tpus:
        return (
            f"accelerator_type: {machine_type} runs {' or '.join(tpus)} x{chips} (got {got}); set "
            f"accelerator_type={tpus[-1]!r} and accelerator_count={chips}"
        )
    if acc in catalog.CLOUD_TPU_COUNTS:
        return cloud_tpu_count_rule(acc, count)
    if count != chips:
        return (
            f"accelerator_count: {machine_type} has {chips} x {acc} (got x{count}); set "
            f"accelerator_count={chips}"
        )
    return None


def cloud_tpu_counts(acc: str) -> str:
    """The counts of a TPU v2 or v3 on ``cloud-tpu`` in words: ``8 (a single TPU), or 32 or a multiple
    of 32 (a TPU Pod)``."""
    single, low, step = catalog.CLOUD_TPU_COUNTS[acc]
    pods = f"{low} or a multiple of {step}" if step == low else f"{low} or more"
    return f"{single} (a single TPU), or {pods} (a TPU Pod)"


def cloud_tpu_count_rule(acc: str, count: int) -> str | None:
    """A count of TPU v2 or v3 on ``cloud-tpu`` that Google's page does not give: a single TPU's, or a
    TPU Pod's (``CLOUD_TPU_COUNTS``)."""
    single, low, step = catalog.CLOUD_TPU_COUNTS[acc]
    if count == single or (count >= low and (count - low) % step == 0):
        return None
    return (
        f"accelerator_count: cloud-tpu takes {acc} x{cloud_tpu_counts(acc)} (got x{count}); set "
        f"accelerator_count={single}, or a TPU Pod's count"
    )
