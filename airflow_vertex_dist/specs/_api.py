"""Helpers for reading v1 JSON bodies (camelCase, as REST or ``to_json`` give them) back into
spec dicts, raising pydantic ``ValidationError`` (``SpecValidationError``) for structural problems."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any, NoReturn

from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.specs.errors import SpecValidationError

__all__ = [
    "ACCELERATOR_NUMBERS",
    "CUSTOM_JOB_OUTPUT_ONLY",
    "OBSERVATION_NOISE_NUMBERS",
    "OUTPUT_ONLY",
    "TUNING_JOB_OUTPUT_ONLY",
    "as_dict",
    "as_int",
    "as_list",
    "enum_name",
    "is_unset",
    "kms_key",
    "reject",
    "snake",
    "unknown_keys",
]

#: v1 ``AcceleratorType`` numbers (``to_json`` writes enums as numbers by default).
ACCELERATOR_NUMBERS: dict[int, str] = {
    0: "ACCELERATOR_TYPE_UNSPECIFIED",
    1: "NVIDIA_TESLA_K80",
    2: "NVIDIA_TESLA_P100",
    3: "NVIDIA_TESLA_V100",
    4: "NVIDIA_TESLA_P4",
    5: "NVIDIA_TESLA_T4",
    6: "TPU_V2",
    7: "TPU_V3",
    8: "NVIDIA_TESLA_A100",
    9: "NVIDIA_A100_80GB",
    10: "TPU_V4_POD",
    11: "NVIDIA_L4",
    12: "TPU_V5_LITEPOD",
    13: "NVIDIA_H100_80GB",
    14: "NVIDIA_H100_MEGA_80GB",
    15: "NVIDIA_H200_141GB",
    16: "NVIDIA_B200",
    17: "NVIDIA_GB200",
    18: "NVIDIA_RTX_PRO_6000",
}
#: Output-only fields of both job resources (v1 JSON names): a Create ignores them.
OUTPUT_ONLY = frozenset(
    {
        "name",
        "state",
        "createTime",
        "startTime",
        "endTime",
        "updateTime",
        "error",
        "satisfiesPzs",
        "satisfiesPzi",
    }
)
CUSTOM_JOB_OUTPUT_ONLY = OUTPUT_ONLY | {"webAccessUris"}
TUNING_JOB_OUTPUT_ONLY = OUTPUT_ONLY | {"trials"}

STRATEGY_NUMBERS = {
    0: "STRATEGY_UNSPECIFIED",
    1: "ON_DEMAND",
    2: "LOW_COST",
    3: "STANDARD",
    4: "SPOT",
    6: "FLEX_START",
}
RESERVATION_NUMBERS = {
    0: "TYPE_UNSPECIFIED",
    1: "NO_RESERVATION",
    2: "ANY_RESERVATION",
    3: "SPECIFIC_RESERVATION",
}
GOAL_NUMBERS = {0: "GOAL_TYPE_UNSPECIFIED", 1: "MAXIMIZE", 2: "MINIMIZE"}
SCALE_NUMBERS = {
    0: "SCALE_TYPE_UNSPECIFIED",
    1: "UNIT_LINEAR_SCALE",
    2: "UNIT_LOG_SCALE",
    3: "UNIT_REVERSE_LOG_SCALE",
}
ALGORITHM_NUMBERS = {0: "ALGORITHM_UNSPECIFIED", 2: "GRID_SEARCH", 3: "RANDOM_SEARCH"}
MEASUREMENT_NUMBERS = {
    0: "MEASUREMENT_SELECTION_TYPE_UNSPECIFIED",
    1: "LAST_MEASUREMENT",
    2: "BEST_MEASUREMENT",
}
OBSERVATION_NOISE_NUMBERS = {0: "OBSERVATION_NOISE_UNSPECIFIED", 1: "LOW", 2: "HIGH"}


def enum_name(value: Any, numbers: dict[int, str]) -> Any:
    """Enum values arrive as names or (``to_json``'s default) numbers; return the name, ``None`` for
    the enum's zero value (proto3: the same as unset), or the input unchanged for pydantic to reject."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = numbers.get(value, value)
    if value is None or value == numbers[0]:
        return None
    return value


_CAMEL = LazyRegex(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def reject(title: str, loc: Sequence[str | int], rule: str, value: Any) -> NoReturn:
    """Raise a ``SpecValidationError`` at ``loc`` with ``rule`` as its message."""
    SpecValidationError.raise_rule(title, tuple(loc), rule, value)


def is_unset(value: Any) -> bool:
    """Proto3 JSON default values of strings, lists, maps and messages (what ``to_json`` writes
    for unset fields). Enum zero values are the enum's business: see ``enum_name`` (a string
    ending in ``_UNSPECIFIED`` is a value like any other)."""
    return value is None or value == "" or value == [] or value == {}


def as_dict(title: str, loc: Sequence[str | int], value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        reject(title, loc, f"{'.'.join(map(str, loc)) or 'body'}: must be a JSON object", value)
    return value


def as_list(title: str, loc: Sequence[str | int], value: Any) -> list[Any]:
    if not isinstance(value, list):
        reject(title, loc, f"{'.'.join(map(str, loc))}: must be a JSON array", value)
    return value


def as_int(value: Any) -> Any:
    """int64 fields arrive as JSON numbers or as decimal strings; anything else is left for
    pydantic to reject."""
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,19}", value):
        return int(value)
    return value


def unknown_keys(
    body: dict[str, Any], known: set[str], out: dict[str, Any], fields: Collection[str] = ()
) -> None:
    """Copy keys the reader does not know into ``out`` in snake_case, so that the model's
    ``extra="forbid"`` rejects them with their path. A key whose snake_case form is one of the
    target model's ``fields`` is renamed (``"<key> (unknown field)"``) so that it cannot pass for
    that field. Fields left at their proto3 default (as ``to_json`` writes every field) are the
    same as absent and are skipped."""
    for key, value in body.items():
        if key in known or is_unset(value) or value is False or (value == 0 and not isinstance(value, str)):
            continue  # a proto3 default: the same as absent
        name = snake(str(key))
        if name in fields or name in out:
            name = f"{key} (unknown field)"
        out[name] = value


def kms_key(title: str, value: Any) -> Any:
    """``encryptionSpec`` -> its ``kmsKeyName``; an encryption spec without one is refused."""
    spec = as_dict(title, ("encryption_spec",), value)
    extra = set(spec) - {"kmsKeyName"}
    if extra:
        rule = f"encryption_spec: unknown field(s) {sorted(extra)}; it has only kmsKeyName"
        reject(title, ("encryption_spec",), rule, spec)
    if is_unset(spec.get("kmsKeyName")):
        reject(
            title,
            ("encryption_spec", "kms_key_name"),
            "encryption_spec.kms_key_name: required when encryption_spec is set "
            "(the v1 EncryptionSpec reference marks it Required)",
            spec,
        )
    return spec["kmsKeyName"]
