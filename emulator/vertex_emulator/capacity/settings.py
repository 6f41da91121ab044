"""``config.Capacity`` to and from the JSON that ``--capacity-file``, the capacity flags and the admin
endpoint ``/emulator/capacity`` speak, validated by one pydantic model, ``CapacitySettings``: an error
names the field (``quota.us-central1.NVIDIA_TESLA_A100: must be ...``).

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
from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, WithJsonSchema

from vertex_emulator._generated.catalog import ACCELERATOR_KINDS
from vertex_emulator.core.config import Capacity
from vertex_emulator.core.validation import SettingsModel, rule, validated_changes

__all__ = [
    "COUNT_MAPS",
    "OVER_QUOTA",
    "Accelerator",
    "CapacityError",
    "CapacitySettings",
    "Count",
    "PerHour",
    "Region",
    "Seconds",
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


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be an integer (got {value!r})")
    if not 0 <= value <= _MAX_COUNT:
        raise ValueError(f"must be from 0 to {_MAX_COUNT} (got {value!r})")
    return value


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number of seconds (got {value!r})")
    if not math.isfinite(value):  # NaN compares false with every bound; Infinity waits forever
        raise ValueError(f"must be a finite number (got {value!r})")
    if not 0 <= value <= _MAX_SECONDS:
        raise ValueError(f"must be from 0 to {_MAX_SECONDS:g} (got {value!r})")
    return float(value)


def _seconds_or_never(value: Any) -> float | None:
    return None if value is None else _seconds(value)


def _per_hour(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"must be a finite number (got {value!r})")
    if not 0 <= value <= 3600:
        raise ValueError(f"must be from 0 to 3600 (got {value!r})")
    return float(value)


def _over_quota(value: Any) -> Any:
    if value not in OVER_QUOTA:
        raise ValueError(f"must be one of {', '.join(OVER_QUOTA)} (got {value!r})")
    return value


def _region(value: Any) -> Any:
    if not isinstance(value, str) or not _REGION_RE.fullmatch(value):
        raise ValueError(f"{value!r} is not a region name like 'us-central1'")
    return value


def _accelerator(value: Any) -> Any:
    if value not in ACCELERATOR_KINDS:
        names = ", ".join(sorted(ACCELERATOR_KINDS))
        raise ValueError(f"{value!r} is not an AcceleratorType name (one of {names})")
    return value


def _mapping(what: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError(f"must map {what} (got {value!r})")
        return value

    return check


Count = Annotated[int, Field(ge=0, le=_MAX_COUNT), rule(_count)]
Seconds = Annotated[float, Field(ge=0, le=_MAX_SECONDS), rule(_seconds)]
Region = Annotated[str, StringConstraints(pattern=f"^{_REGION_RE.pattern}$"), rule(_region)]
Accelerator = Annotated[
    str, WithJsonSchema({"type": "string", "enum": sorted(ACCELERATOR_KINDS)}), rule(_accelerator)
]
#: Spot preemptions per replica and hour
PerHour = Annotated[float, Field(ge=0, le=3600), rule(_per_hour)]
#: ``{region: {accelerator type: count}}``
CountMap = Annotated[
    dict[Region, Annotated[dict[Accelerator, Count], rule(_mapping("an accelerator type to a count"))]],
    rule(_mapping("a region to {accelerator type: count}")),
]


class CapacitySettings(SettingsModel):
    """The capacity settings as ``--capacity-file``, the flags, the admin API (``/emulator/capacity``)
    and its JSON schema (``/emulator/capacity/schema``) speak them; ``config.Capacity`` documents each
    field, and holds them while the emulator runs."""

    quota: CountMap = {}
    preemptible_quota: CountMap = {}
    stock: CountMap = {}
    spot_stock: CountMap = {}
    flex_start_stock: CountMap = {}
    stockout_after_s: Seconds = 60.0
    over_quota: Annotated[Literal["queue", "refuse"], rule(_over_quota)] = "queue"
    spot_preemptions_per_hour: PerHour = 0.0
    spot_preempt_after_s: Annotated[
        Annotated[float, Field(ge=0, le=_MAX_SECONDS)] | None, rule(_seconds_or_never)
    ] = None
    spot_restart_limit: Count = 6
    spot_notice_s: Seconds = 30.0


def _validated(changes: Any) -> dict[str, Any]:
    return validated_changes(CapacitySettings, changes, CapacityError, name="capacity", what="capacity")


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
