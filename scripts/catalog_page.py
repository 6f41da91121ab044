"""The catalog's TPU VM machine types and their topologies, derived from the stored tables of Google's
"Configure compute resources" page and the TPU pages it links to (``catalog/configure_compute_page.json``).
``scripts/catalog_gen.py`` merges what this derives into the hand-kept catalog before it writes the
generated modules; ``tests/test_catalog_page.py`` re-derives it and fails on any difference.

The derivation is mechanical: every row of a TPU version's slice table that names its machine type gives
(machine type, topology) -> VMs, less the rows the table's notes reserve for the GKE API; a version whose
slice table names no machine type takes its machine types from the table that maps accelerator types to
machine types, each with the slice of as many chips as the machine type has (one VM). A machine type's
chips per VM are its own row's chips divided by its VMs. Nothing is derived from a table that was not read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["PAGE", "derive", "load_page", "merge"]

PAGE = Path(__file__).resolve().parents[1] / "catalog" / "configure_compute_page.json"


def load_page(path: Path = PAGE) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]]


def _from_slices(table: dict[str, Any], out: dict[str, dict[str, Any]]) -> None:
    """Rows that name their machine type: (machine type, topology) -> VMs; chips per VM."""
    reserved = {tuple(pair) for pair in table.get("gke_api_only", ())}
    for row in _rows(table):
        if (row["topology"], row["machine_type"]) in reserved:
            continue
        entry = out.setdefault(row["machine_type"], _entry(table, row["chips"] // row["vms"]))
        entry["topologies"][row["topology"]] = row["vms"]


def _from_machine_types(
    slices: dict[str, Any], types: dict[str, Any], out: dict[str, dict[str, Any]]
) -> None:
    """A slice table without machine types: each machine type of ``types`` with the slice of its chips."""
    shapes = {row["chips"]: row["topology"] for row in _rows(slices)}
    for row in _rows(types):
        entry = out.setdefault(row["machine_type"], _entry(slices, row["chips"]))
        if row["chips"] in shapes:
            entry["topologies"][shapes[row["chips"]]] = 1


def _entry(table: dict[str, Any], chips: int) -> dict[str, Any]:
    acc = table.get("accelerator_type")
    return {"accelerators": [acc] if acc else [], "chips": chips, "topologies": {}}


def derive(page: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """TPU VM machine type -> {"accelerators": the v1 accelerator types it may name (none: it names
    none), "chips": chips per VM, "topologies": {topology: VMs}}, sorted by name."""
    related = page["related"]
    out: dict[str, dict[str, Any]] = {}
    for key, table in related.items():
        if not key.endswith("_slices") or not table.get("complete"):
            continue
        if "machine_type" in table["columns"]:
            _from_slices(table, out)
        else:
            types = related.get(key.replace("_slices", "_machine_types"))
            if types is not None and types.get("complete"):
                _from_machine_types(table, types, out)
    return {name: out[name] for name in sorted(out)}


def merge(data: dict[str, Any], derived: dict[str, dict[str, Any]], series: str = "tpu-vm") -> dict[str, Any]:
    """The catalog with the derived TPU VM machine types in ``series`` (as ``[accelerators, chips, False]``:
    a request may leave the accelerator out) and ``tpu_topologies``; a derived machine type the hand-kept
    catalog also lists is an error (one source each)."""
    tpu = data["series"][series]["tpu"]
    both = sorted(set(tpu) & set(derived))
    if both:
        raise ValueError(f"machine types both hand-kept and derived from the page: {both}")
    for name, entry in derived.items():
        tpu[name] = [entry["accelerators"], entry["chips"], False]
    data["tpu_topologies"] = {name: dict(entry["topologies"]) for name, entry in derived.items()}
    return data
