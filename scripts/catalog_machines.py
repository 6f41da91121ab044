"""The machine types of the catalog (``catalog/vertex_catalog.json``): each series' types from its shapes,
and the table of every machine type with what it takes. Read by the rules (``catalog_rules.py``) and the
writer (``catalog_render.py``) of ``scripts/catalog_gen.py``."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["machine_table", "natural", "shape_types"]


def shape_types(series: str, spec: dict[str, Any]) -> dict[str, tuple[int, float | None]]:
    """``{machine type: (vCPUs, memory GB or None)}`` of a series given by shapes."""
    out: dict[str, tuple[int, float | None]] = {}
    ratios = spec.get("memory_gb_per_vcpu", {})
    for shape, sizes in spec.get("shapes", {}).items():
        for n in sizes:
            ratio = ratios.get(shape)
            out[f"{series}-{shape}-{n}"] = (n, round(n * ratio, 3) if ratio is not None else None)
    return out


def machine_table(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every machine type: its series, and what it takes (attached GPUs' valid counts, built-in
    accelerators, or TPUs)."""
    limits = data["attachable_gpus"]["limits"]
    out: dict[str, dict[str, Any]] = {}
    for series, spec in data["series"].items():
        for name, (vcpus, memory) in shape_types(series, spec).items():
            entry: dict[str, Any] = {"series": series}
            if spec["gpus"] == "attachable":
                takes: dict[str, tuple[int, ...]] = {}
                for gpu, per_count in sorted(limits.items()):
                    counts = tuple(
                        sorted(
                            int(c)
                            for c, (max_vcpus, max_memory) in per_count.items()
                            if vcpus <= max_vcpus and memory is not None and memory <= max_memory
                        )
                    )
                    if counts:
                        takes[gpu] = counts
                entry["attachable"] = takes
            out[name] = entry
        for name, (acc, count) in spec.get("built_in", {}).items():
            out[name] = {"series": series, "built_in": (acc, count)}
        for name, (accs, count, required) in spec.get("tpu", {}).items():
            out[name] = {"series": series, "tpu": (tuple(accs), count, required)}
    return dict(sorted(out.items(), key=lambda item: natural(item[0])))


def natural(name: str) -> tuple[Any, ...]:
    """``n1-standard-4`` before ``n1-standard-16``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))
