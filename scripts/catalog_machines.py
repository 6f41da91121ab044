"""The machine types of the catalog: the table of every machine type with its series and what it takes,
from the catalog with the stored page's machine types merged in (``catalog_page.merge``). Read by the
rules (``catalog_rules.py``) and the writer (``catalog_render.py``) of ``scripts/catalog_gen.py``."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["machine_table", "natural"]


def machine_table(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every machine type: its series, and what it takes (attached GPUs' valid counts, built-in
    accelerators, or TPUs)."""
    out: dict[str, dict[str, Any]] = {}
    for series, spec in data["series"].items():
        for name in spec.get("machine_types", ()):
            entry: dict[str, Any] = {"series": series}
            if name in spec.get("built_in", {}):
                acc, count = spec["built_in"][name]
                entry["built_in"] = (acc, count)
            elif name in spec.get("tpu", {}):
                accs, count, required = spec["tpu"][name]
                entry["tpu"] = (tuple(accs), count, required)
            elif name in spec.get("attachable", {}):
                takes = spec["attachable"][name]
                entry["attachable"] = {gpu: tuple(takes[gpu]) for gpu in sorted(takes)}
            out[name] = entry
    return dict(sorted(out.items(), key=lambda item: natural(item[0])))


def natural(name: str) -> tuple[Any, ...]:
    """``n1-standard-4`` before ``n1-standard-16``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))
