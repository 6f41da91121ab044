"""What the emulator's settings models (core/faults.py's ``FaultSettings``, capacity/settings.py's
``CapacitySettings``) share: a rule of a field as a pydantic validator with the emulator's own words,
the one-line error naming the field (``quota.us-central1.NVIDIA_L4: must be from 0 to ...``) made of
a ``ValidationError``, and the partial change (only the keys given) a model validates.

Every way a setting arrives (a CLI flag, the capacity file, the admin API's PUT body) goes through
``validated_changes``, so a bad value gets the same error whichever way it came.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError
from pydantic_core import PydanticCustomError

__all__ = ["SettingsModel", "error_text", "field_path", "rule", "validated_changes"]

_T = TypeVar("_T")


class SettingsModel(BaseModel):
    """A settings model: unknown keys refused, no type coerced but by the fields' rules."""

    model_config = ConfigDict(extra="forbid", strict=True)


def rule(check: Callable[[Any], _T]) -> BeforeValidator:
    """A validator running ``check`` on the raw value: a ValueError it raises becomes the field's error,
    worded as ``check`` words it (pydantic adds no prefix); what it returns is the value kept."""

    def validate(value: Any) -> _T:
        try:
            return check(value)
        except ValueError as exc:
            raise PydanticCustomError("emulator_setting", "{text}", {"text": str(exc)}) from None

    return BeforeValidator(validate)


def field_path(loc: Sequence[int | str]) -> str:
    """The field path of an error's location (``quota.us-central1``, ``error_codes[1]``); an error
    about a mapping's key (pydantic's ``KEY.[key]`` steps) is the mapping's (its rule names the key)."""
    if len(loc) >= 2 and loc[-1] == "[key]":
        loc = loc[:-2]
    text = ""
    for step in loc:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


def error_text(exc: ValidationError, *, what: str, known: Sequence[str]) -> str:
    """The first error of ``exc`` as one line that names the field and the rule; ``what`` names the
    settings (``fault``, ``capacity``), ``known`` their fields (listed when a key is unknown)."""
    error = exc.errors(include_url=False)[0]
    path = field_path(error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{path}: unknown {what} setting (known: {', '.join(known)})"
    # the field's own rule (``rule``), or one of pydantic's (its wording, after the field's path)
    return f"{path}: {error['msg']}"


_M = TypeVar("_M", bound=SettingsModel)


def validated_changes(
    model: type[_M], changes: Any, error: Callable[[str], ValueError], *, name: str, what: str
) -> dict[str, Any]:
    """The keys ``changes`` gives, validated by ``model`` (as its rules return them); ``error(text)``
    raised on the first broken rule (``name`` names the whole object, ``what`` one setting's kind).
    Keys not given are not in the result: a partial change."""
    if not isinstance(changes, Mapping):
        raise error(f"{name}: must be a JSON object (got {type(changes).__name__})")
    try:
        checked = model.model_validate(dict(changes))
    except ValidationError as exc:
        raise error(error_text(exc, what=what, known=tuple(model.model_fields))) from None
    return {name: getattr(checked, name) for name in changes}
