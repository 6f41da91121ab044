"""``config.Capacity`` to and from the JSON that ``--capacity-file``, the capacity flags and the admin
endpoint ``/emulator/capacity`` speak, validated: an error names the field (``quota.us-central1.
NVIDIA_TESLA_A100: must be ...``).

The JSON object has the dataclass's field names::

    {"quota": {"us-central1": {"NVIDIA_TESLA_A100": 8}},
     "preemptible_quota": {}, "stock": {"us-central1": {"NVIDIA_TESLA_A100": 0}},
     "spot_stock": {}, "flex_start_stock": {},
     "stockout_after_s": 60, "over_quota": "queue",
     "spot_preemptions_per_hour": 0, "spot_preempt_after_s": null,
     "spot_restart_limit": 6, "spot_notice_s": 30}

A change (PUT) is a partial object; a map given replaces the whole map. Counts are integers from 0
to 2**31 - 1, times finite numbers of seconds, accelerator types v1 ``AcceleratorType`` names.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from vertex_emulator.core.config import Capacity

__all__ = [
    "COUNT_MAPS",
    "OVER_QUOTA",
    "CapacityError",
    "capacity_from_json",
    "capacity_to_json",
    "load_capacity_file",
    "update_capacity",
]

#: The ``{region: {accelerator: count}}`` fields.
COUNT_MAPS = ("quota", "preemptible_quota", "stock", "spot_stock", "flex_start_stock")
#: What a Create over the quota left does (see ``Capacity.over_quota``).
OVER_QUOTA = ("queue", "refuse")
_FIELDS = tuple(f.name for f in fields(Capacity) if f.name != "lock")
_MAX_COUNT = 2**31 - 1
_MAX_SECONDS = 10 * 365 * 24 * 3600.0  # ten years: past it, "never"
_REGION_RE = re.compile(r"[a-z][a-z0-9-]{0,62}")


class CapacityError(ValueError):
    """Capacity settings that break a rule; the message names the field."""


def _accelerators() -> frozenset[str]:
    from vertex_emulator._generated.catalog import ACCELERATOR_KINDS

    return frozenset(ACCELERATOR_KINDS)


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CapacityError(f"{name}: must be an integer (got {value!r})")
    if not 0 <= value <= _MAX_COUNT:
        raise CapacityError(f"{name}: must be from 0 to {_MAX_COUNT} (got {value!r})")
    return value


def _seconds(name: str, value: Any, *, lo: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CapacityError(f"{name}: must be a number of seconds (got {value!r})")
    if not math.isfinite(value):  # NaN compares false with every bound; Infinity waits forever
        raise CapacityError(f"{name}: must be a finite number (got {value!r})")
    if not lo <= value <= _MAX_SECONDS:
        raise CapacityError(f"{name}: must be from {lo:g} to {_MAX_SECONDS:g} (got {value!r})")
    return float(value)


def _count_map(name: str, value: Any) -> dict[str, dict[str, int]]:
    if not isinstance(value, Mapping):
        raise CapacityError(f"{name}: must map a region to {{accelerator type: count}} (got {value!r})")
    known = _accelerators()
    out: dict[str, dict[str, int]] = {}
    for region, counts in value.items():
        if not isinstance(region, str) or not _REGION_RE.fullmatch(region):
            raise CapacityError(f"{name}: {region!r} is not a region name like 'us-central1'")
        where = f"{name}.{region}"
        if not isinstance(counts, Mapping):
            raise CapacityError(f"{where}: must map an accelerator type to a count (got {counts!r})")
        out[region] = {}
        for accelerator, count in counts.items():
            if accelerator not in known:
                names = ", ".join(sorted(known))
                problem = f"{accelerator!r} is not an AcceleratorType name (one of {names})"
                raise CapacityError(f"{where}: {problem}")
            out[region][accelerator] = _count(f"{where}.{accelerator}", count)
    return out


def _validated(changes: Any) -> dict[str, Any]:
    if not isinstance(changes, Mapping):
        raise CapacityError(f"capacity: must be a JSON object (got {type(changes).__name__})")
    out: dict[str, Any] = {}
    for key, value in changes.items():
        if key not in _FIELDS:
            raise CapacityError(f"{key}: unknown capacity setting (known: {', '.join(_FIELDS)})")
        if key in COUNT_MAPS:
            out[key] = _count_map(key, value)
        elif key == "over_quota":
            if value not in OVER_QUOTA:
                raise CapacityError(f"over_quota: must be one of {', '.join(OVER_QUOTA)} (got {value!r})")
            out[key] = value
        elif key == "spot_restart_limit":
            out[key] = _count(key, value)
        elif key == "spot_preempt_after_s":
            out[key] = None if value is None else _seconds(key, value)
        elif key == "spot_preemptions_per_hour":
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise CapacityError(f"{key}: must be a finite number (got {value!r})")
            if not 0 <= value <= 3600:
                raise CapacityError(f"{key}: must be from 0 to 3600 (got {value!r})")
            out[key] = float(value)
        else:  # stockout_after_s, spot_notice_s
            out[key] = _seconds(key, value)
    return out


def update_capacity(capacity: Capacity, changes: Any) -> None:
    """Validate ``changes`` (a partial Capacity JSON object) and apply them in place, atomically."""
    checked = _validated(changes)
    with capacity.lock:
        for key, value in checked.items():
            setattr(capacity, key, value)


def capacity_from_json(data: Any) -> Capacity:
    """A new Capacity from a (partial) JSON object, validated."""
    capacity = Capacity()
    update_capacity(capacity, data)
    return capacity


def capacity_to_json(capacity: Capacity) -> dict[str, Any]:
    """The settings as a JSON object (field names as in the dataclass)."""
    with capacity.lock:
        out: dict[str, Any] = {name: getattr(capacity, name) for name in _FIELDS}
    for name in COUNT_MAPS:
        out[name] = {region: dict(counts) for region, counts in out[name].items()}
    return out


def load_capacity_file(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (a CapacityError naming the file when it cannot be read or parsed)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise CapacityError(f"--capacity-file: cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CapacityError(f"--capacity-file: {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CapacityError(f"--capacity-file: {path} must hold a JSON object")
    _validated(data)  # field-named errors before anything starts
    return data
