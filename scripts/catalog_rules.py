"""The rules the catalog's data (``catalog/vertex_catalog.json``) keeps, one function a section: sources
read and cited, accelerators of a kind, GPU limits, series and their machine types (each in one series),
boot disks, regions, then prices (``catalog_prices.py``). ``scripts/catalog_gen.py`` writes nothing while
one is broken; ``tests/test_catalog.py`` checks them."""

from __future__ import annotations

from typing import Any

# scripts/ is on the path: run as a script, or by the tests
from catalog_prices import price_problems

__all__ = ["problems"]

_GPU_MODES = ("attachable", "built_in", "none", "tpu")


def problems(data: dict[str, Any]) -> list[str]:
    """What is wrong with the catalog's own data (empty when it is consistent)."""
    sources = data.get("sources", {})
    accelerators = data.get("accelerators", {})
    out = _source_problems(sources)
    out += _accelerator_problems(accelerators, sources)
    seen: dict[str, str] = {}
    disk_types = set(data.get("boot_disk", {}).get("types", ()))
    for series, spec in data.get("series", {}).items():
        out += _series_problems(series, spec, accelerators, sources, disk_types)
        out += _one_series_each(series, spec, seen)
    out += _boot_disk_problems(data, sources)
    regions = data.get("regions", {})
    out += _region_problems(regions, accelerators, sources)
    training = set(regions.get("training", ()))
    return out + price_problems(
        data, set(seen), {k: a.get("kind") for k, a in accelerators.items()}, training
    )


def _cited(where: str, keys: Any, sources: dict[str, Any]) -> list[str]:
    """``where`` cites at least one source, every one a key of ``sources``."""
    out = [f"{where}: cites no source"] if not keys else []
    return out + [f"{where}: unknown source {key!r}" for key in keys or () if key not in sources]


def _source_problems(sources: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, source in sources.items():
        for field in ("title", "url", "read", "verified"):
            if not source.get(field):
                out.append(f"sources.{key}: no {field}")
        if source.get("verified") not in ("package", "full", "excerpt", "none"):
            out.append(f"sources.{key}: verified must be package, full, excerpt or none")
    return out


def _accelerator_problems(accelerators: dict[str, Any], sources: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for name, acc in accelerators.items():
        out += _cited(f"accelerators.{name}", acc.get("sources"), sources)
        if acc.get("kind") not in ("gpu", "tpu"):
            out.append(f"accelerators.{name}: kind must be gpu or tpu")
    return out


def _series_problems(
    series: str,
    spec: dict[str, Any],
    accelerators: dict[str, Any],
    sources: dict[str, Any],
    disk_types: set[str],
) -> list[str]:
    """A series: cited, a GPU mode, boot disks of the catalog, built-in GPUs and TPUs of their kind."""
    out = _cited(f"series.{series}", spec.get("sources"), sources)
    if spec.get("gpus") not in _GPU_MODES:
        out.append(f"series.{series}: gpus must be one of {', '.join(_GPU_MODES)}")
    for name, takes in spec.get("attachable", {}).items():
        for gpu, counts in takes.items():
            if accelerators.get(gpu, {}).get("kind") != "gpu" or not counts or min(counts) < 1:
                out.append(f"series.{series}.attachable.{name}.{gpu}: not a GPU and positive counts")
    if not spec.get("boot_disk_types") or not set(spec["boot_disk_types"]) <= disk_types:
        out.append(f"series.{series}: boot_disk_types must be a non-empty subset of boot_disk.types")
    for name, (acc, count) in spec.get("built_in", {}).items():
        if accelerators.get(acc, {}).get("kind") != "gpu" or count < 1:
            out.append(f"series.{series}.built_in.{name}: {acc} x{count} is not a GPU and a count")
    for name, (accs, count, _required) in spec.get("tpu", {}).items():
        if any(accelerators.get(a, {}).get("kind") != "tpu" for a in accs) or count < 1:
            out.append(f"series.{series}.tpu.{name}: needs TPU accelerators (or none) and a positive count")
    return out


def _one_series_each(series: str, spec: dict[str, Any], seen: dict[str, str]) -> list[str]:
    """A series has machine types, none of them in an earlier series; ``seen`` takes them in."""
    out: list[str] = []
    names = list(spec.get("machine_types", ()))
    if not names:
        out.append(f"series.{series}: no machine types")
    for name in names:
        if name in seen:
            out.append(f"{name}: in series {seen[name]} and {series}")
        seen[name] = series
    return out


def _boot_disk_problems(data: dict[str, Any], sources: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for series, disk in data.get("boot_disk", {}).get("default_by_series", {}).items():
        if disk not in data.get("series", {}).get(series, {}).get("boot_disk_types", ()):
            out.append(f"boot_disk.default_by_series.{series}: {disk} is not a boot disk type of the series")
    boot = data.get("boot_disk", {})
    out += _cited("boot_disk", boot.get("sources"), sources)
    owners = {m: s for s, spec in data.get("series", {}).items() for m in spec.get("machine_types", ())}
    for machine, disk in boot.get("default_for", {}).items():
        series = owners.get(machine)
        if boot.get("default_by_series", {}).get(series, boot.get("default")) != disk:
            out.append(f"boot_disk: the page's default for {machine} is {disk}, not its series' ({series})")
    low, high = boot.get("size_gb", (0, 0))
    if not 0 < low <= boot.get("size_default_gb", 0) <= high:
        out.append("boot_disk: size_gb must be a positive range holding size_default_gb")
    return out


def _region_problems(
    regions: dict[str, Any], accelerators: dict[str, Any], sources: dict[str, Any]
) -> list[str]:
    out = _cited("regions", regions.get("sources"), sources)
    training = set(regions.get("training", ()))
    for acc, where in regions.get("accelerators", {}).items():
        if acc not in accelerators:
            out.append(f"regions.accelerators.{acc}: not an accelerator")
        if not set(where) <= training:
            out.append(f"regions.accelerators.{acc}: regions outside regions.training")
    return out
