"""Shared plumbing of the spec models: base config, rule errors, durations, label rules."""

from __future__ import annotations

import logging
import math
from datetime import timedelta
from typing import Annotated, Any, NoReturn

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, ValidationError, ValidationInfo
from pydantic_core import PydanticCustomError, core_schema
from typing_extensions import Self

from airflow_vertex_dist.common import durations
from airflow_vertex_dist.common.durations import MAX_DURATION_S, duration_to_api
from airflow_vertex_dist.common.labels import labels_error
from airflow_vertex_dist.specs.errors import SpecValidationError

__all__ = [
    "JINJA_MARKERS",
    "LOGGER",
    "RENDERED_CONTEXT",
    "SERVER_CONTEXT",
    "Duration",
    "SpecModel",
    "SpecValidationError",
    "check_labels",
    "defers_jinja",
    "fail",
    "is_template",
    "parse_duration",
]

LOGGER = logging.getLogger("airflow_vertex_dist.specs")

#: Validation context of ``from_api``: the rules the service applies, not the stricter client ones.
SERVER_CONTEXT: dict[str, bool] = {"server": True}

#: Validation context of a spec an operator rendered: no Jinja is left to wait for, every rule applies.
RENDERED_CONTEXT: dict[str, bool] = {"rendered": True}

#: What makes a string a Jinja template (Airflow renders the strings of a templated field).
JINJA_MARKERS = ("{{", "{%", "{#")


def is_template(value: object) -> bool:
    """Whether ``value`` is a string holding a Jinja marker (``{{``, ``{%`` or ``{#``)."""
    return isinstance(value, str) and any(marker in value for marker in JINJA_MARKERS)


def defers_jinja(info: ValidationInfo) -> bool:
    """Whether a field whose value holds Jinja waits for rendering to be judged: yes for a spec built in
    Python or from a dict; no once an operator rendered it (``RENDERED_CONTEXT``) or for a body the
    service returned (``SERVER_CONTEXT``)."""
    context = info.context if isinstance(info.context, dict) else {}
    return not (context.get("rendered") or context.get("server"))


class SpecModel(BaseModel):
    """Base of every spec: immutable, unknown keys rejected, buildable from a plain dict.

    A spec that does not validate, built in Python or validated from a dict or JSON, raises
    ``SpecValidationError`` (a ``pydantic.ValidationError``)
    whose text is the project's ``path: rule`` lines. Nested models validated from dicts are checked
    by the outer model's validator, so its error covers them, with their paths.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, defer_build=True)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except SpecValidationError:
            raise
        except ValidationError as exc:
            raise SpecValidationError.of(exc, type(self)) from None

    # Pydantic treats this __init__ as its own (the flag RootModel sets too): nested models validated
    # from dicts do not call it, and the models' core schemas stay what they were.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        try:
            return super().model_validate(obj, **kwargs)
        except SpecValidationError:
            raise
        except ValidationError as exc:
            raise SpecValidationError.of(exc, cls) from None

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        try:
            return super().model_validate_json(json_data, **kwargs)
        except SpecValidationError:
            raise
        except ValidationError as exc:
            raise SpecValidationError.of(exc, cls) from None

    @classmethod
    def model_validate_strings(cls, obj: Any, **kwargs: Any) -> Self:
        try:
            return super().model_validate_strings(obj, **kwargs)
        except SpecValidationError:
            raise
        except ValidationError as exc:
            raise SpecValidationError.of(exc, cls) from None


def fail(rule: str) -> NoReturn:
    """Raise a validation error whose text is exactly ``rule`` (no "Value error," prefix).

    By convention ``rule`` starts with the field path relative to the model that raises it,
    e.g. ``"reduction_server: reducers must not have accelerators (got NVIDIA_TESLA_T4 x1)"``.
    """
    raise PydanticCustomError("vertex_spec_rule", "{rule}", {"rule": rule})


def parse_duration(value: Any) -> Any:
    """Accept a ``timedelta``, a number of seconds, or the proto JSON form ``"3600s"``/``"1.5s"``
    (``airflow_vertex_dist.common.durations.parse_duration``)."""
    if isinstance(value, bool):
        return value  # left for pydantic to reject
    if isinstance(value, int | float):
        if abs(value) > MAX_DURATION_S or (isinstance(value, float) and not math.isfinite(value)):
            fail(f"duration must be a finite number of seconds (got {value!r})")
        return timedelta(seconds=value)
    if isinstance(value, str):
        try:
            parsed = durations.parse_duration(value)
        except ValueError as exc:
            fail(str(exc))
        if parsed is not None:
            return parsed
    return value


class _DurationSchema:
    """A duration: read by ``parse_duration`` first, serialized as proto JSON (``"3600s"``) in JSON
    mode and kept a ``timedelta`` in Python mode. The same schema as ``BeforeValidator(parse_duration)``
    plus ``PlainSerializer(duration_to_api, return_type=str, when_used="json")``, written against
    pydantic-core so that importing the specs does not load ``pydantic.functional_serializers``."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_before_validator_function(
            parse_duration,
            handler(source),
            serialization=core_schema.plain_serializer_function_ser_schema(
                duration_to_api, info_arg=False, return_schema=core_schema.str_schema(), when_used="json"
            ),
        )


Duration = Annotated[timedelta, _DurationSchema()]


def check_labels(field: str, labels: dict[str, str], *, defer_jinja: bool = False) -> None:
    """The Vertex AI label rules (``airflow_vertex_dist.common.labels``, shared with the hooks). With
    ``defer_jinja``, a value holding Jinja is judged once rendered; keys are never rendered."""
    if defer_jinja:
        labels = {key: "" if is_template(value) else value for key, value in labels.items()}
    error = labels_error(field, labels)
    if error is not None:
        fail(error)
