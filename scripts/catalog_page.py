"""The catalog's machine types and what each takes, derived from the tables of Google's "Configure compute
resources" page stored as data (``catalog/configure_compute_page.json``). ``scripts/catalog_gen.py``
merges what this derives into the hand-kept catalog (``catalog/vertex_catalog.json``: sources, the series
each machine type belongs to, boot disks by series, regions, prices) before it writes the generated
modules; ``tests/test_catalog_page.py`` re-derives it and fails on any difference.

The derivation is mechanical:

* the machine types are the page's list (``machineSpec.machineType``) and the machine types of its TPU
  tables (the list names ``cloud-tpu`` and TPU v5e's types, the v6e and 7x sections name theirs in their
  tables only); each belongs to the series of the catalog whose prefix it starts with (the longest);
* a machine type's GPUs and their counts are its row of the GPU table; a series whose machine types come
  with their GPUs takes the one GPU and count of each row;
* a TPU VM machine type's topologies are the rows of its TPU table (topology -> VMs of the slice), its
  chips per VM the machine-type comparison table's (or a row's chips over its VMs); ``cloud-tpu`` takes
  the TPU v2 and v3 counts of its section;
* the TPU pool rule (one worker pool, one replica) and the boot disk's types, default and sizes are the
  page's own.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

__all__ = ["PAGE", "derive", "load_page", "merge"]

PAGE = Path(__file__).resolve().parents[1] / "catalog" / "configure_compute_page.json"
_TPU_TABLES = ("tpu_v5e", "tpu_v6e", "tpu7x")
_TPU_MACHINE_TABLES = ("tpu_v5e_machines", "tpu_v6e_machines")


def load_page(path: Path = PAGE) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]]


def _tpu_vms(tables: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """TPU VM machine type -> {"chips": chips per VM, "topologies": {topology: VMs}}."""
    chips = {row["machine_type"]: row["chips"] for key in _TPU_MACHINE_TABLES for row in _rows(tables[key])}
    out: dict[str, dict[str, Any]] = {}
    for key in _TPU_TABLES:
        for row in _rows(tables[key]):
            name, topology = row["machine_type"], row["topology"]
            if math.prod(int(n) for n in topology.split("x")) != row["chips"] or row["chips"] % row["vms"]:
                raise ValueError(f"{key}: {name} {topology}: {row['chips']} chips on {row['vms']} VMs")
            per_vm = row["chips"] // row["vms"]
            entry = out.setdefault(name, {"chips": chips.get(name, per_vm), "topologies": {}})
            if entry["chips"] != per_vm:
                raise ValueError(f"{key}: {name} {topology}: {per_vm} chips per VM, not {entry['chips']}")
            entry["topologies"][topology] = row["vms"]
    return out


def derive(page: dict[str, Any]) -> dict[str, Any]:
    """What the stored page gives: ``machine_types`` (the list, then the TPU tables' types),
    ``gpus`` (machine type -> GPU -> counts), ``tpu_vms``, ``cloud_tpu`` (TPU -> [single, smallest pod
    count, pod step]), ``tpu_pools`` and ``boot_disk``."""
    tables = page["tables"]
    tpu_vms = _tpu_vms(tables)
    listed = [row[0] for row in tables["machine_types"]["rows"]]
    machine_types = listed + [name for name in tpu_vms if name not in listed]
    gpus = {
        name: {gpu: list(counts) for gpu, counts in row.items()} for name, row in tables["gpu_counts"]["rows"]
    }
    unknown = sorted(set(gpus) - set(machine_types))
    if unknown:
        raise ValueError(f"gpu_counts: rows of machine types the list does not give: {unknown}")
    cloud_tpu = {
        row["accelerator_type"]: [row["single"], row["pod_min"], row["pod_step"]]
        for row in _rows(tables["cloud_tpu"])
    }
    pools = tables["tpu_pools"]
    disk = tables["boot_disk"]
    return {
        "machine_types": machine_types,
        "gpus": gpus,
        "tpu_vms": tpu_vms,
        "cloud_tpu_machine": tables["cloud_tpu"]["machine_type"],
        "cloud_tpu": cloud_tpu,
        "tpu_pools": [pools["worker_pools"], pools["replica_count"]],
        "boot_disk": {k: disk[k] for k in ("types", "default", "default_for", "size_gb", "size_default_gb")},
    }


def _owner(name: str, prefixes: list[tuple[str, str]]) -> str:
    for prefix, series in prefixes:
        if name == prefix or (prefix.endswith("-") and name.startswith(prefix)):
            return series
    raise ValueError(f"the page lists {name}, which no series of the catalog claims (series.*.prefixes)")


def _fill(series: str, spec: dict[str, Any], derived: dict[str, Any]) -> None:
    """The machine types of ``series`` with what each takes, by the series' ``gpus`` mode."""
    mode, gpus = spec["gpus"], derived["gpus"]
    for name in spec["machine_types"]:
        row = gpus.get(name, {})
        if mode == "built_in":
            if len(row) != 1 or len(next(iter(row.values()))) != 1:
                raise ValueError(f"{name}: series {series} comes with its GPUs, its row gives {row}")
            ((gpu, (count,)),) = row.items()
            spec.setdefault("built_in", {})[name] = [gpu, count]
        elif mode == "attachable":
            if row:
                spec.setdefault("attachable", {})[name] = row
        elif row:
            raise ValueError(f"{name}: series {series} takes no GPUs, the GPU table gives it {row}")
        elif mode == "tpu" and name == derived["cloud_tpu_machine"]:
            singles = {single for single, _, _ in derived["cloud_tpu"].values()}
            if len(singles) != 1:
                raise ValueError(f"{name}: one single-TPU count expected, got {sorted(singles)}")
            spec.setdefault("tpu", {})[name] = [sorted(derived["cloud_tpu"]), singles.pop(), True]
        elif mode == "tpu":
            vm = derived["tpu_vms"].get(name)
            if vm is None:
                raise ValueError(f"{name}: the page's TPU tables do not give it")
            accs = next((a for p, a in spec.get("accelerators", {}).items() if name.startswith(p)), [])
            spec.setdefault("tpu", {})[name] = [list(accs), vm["chips"], False]


def merge(data: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
    """The hand-kept catalog with the page's machine types in their series (``machine_types``, and
    ``built_in``, ``attachable`` or ``tpu`` by the series' ``gpus`` mode), ``tpu_topologies``,
    ``cloud_tpu_counts``, ``tpu_pools`` and the page's boot disk facts; a machine type no series claims,
    or a series the page gives no machine type, is an error (one source each)."""
    series = data["series"]
    prefixes = sorted(
        ((p, s) for s, spec in series.items() for p in spec["prefixes"]), key=lambda item: -len(item[0])
    )
    for spec in series.values():
        spec["machine_types"] = []
    for name in derived["machine_types"]:
        series[_owner(name, prefixes)]["machine_types"].append(name)
    for name, spec in series.items():
        if not spec["machine_types"]:
            raise ValueError(f"series.{name}: the page gives none of its machine types")
        _fill(name, spec, derived)
    data["tpu_topologies"] = {name: dict(vm["topologies"]) for name, vm in derived["tpu_vms"].items()}
    data["cloud_tpu_counts"] = {acc: list(c) for acc, c in sorted(derived["cloud_tpu"].items())}
    data["tpu_pools"] = list(derived["tpu_pools"])
    disk = derived["boot_disk"]
    data["boot_disk"].update(
        types=[disk["default"], *(d for d in disk["types"] if d != disk["default"])],  # the default first
        default=disk["default"],
        size_gb=list(disk["size_gb"]),
        size_default_gb=disk["size_default_gb"],
        default_for=dict(disk["default_for"]),
    )
    return data
