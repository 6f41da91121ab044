"""Study parameters: double, integer, categorical and discrete value specs with their scales and
conditional children (v1 ``StudySpec.ParameterSpec``). Reading them from the v1 JSON is in
``_parameter_from_api``.

In a dict or YAML file each parameter names its kind in ``type``: ``"double"``, ``"integer"``,
``"categorical"`` or ``"discrete"``. Conditional children hang under a parent as
``conditional_parameters: [{parent_values: [...], parameter: {...}}]``.
"""

# No ``from __future__ import annotations`` in the modules that define spec models, unlike the rest of
# the package: with it, pydantic compiles and evaluates every field's annotation string when the model
# classes are created, on every DAG parse -- about a fifth of this package's parse cost (some 20 M of
# 115 M instructions for the benchmark's DAG file). Forward references are quoted instead.

from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import Field, FiniteFloat, field_validator, model_validator
from typing_extensions import Self  # typing.Self is Python 3.11+; the package supports 3.10

from airflow_vertex_dist.specs._base import SpecModel, fail
from airflow_vertex_dist.specs._checks import INT64_MAX, check_id

__all__ = [
    "CategoricalParameter",
    "ConditionalParameter",
    "DiscreteParameter",
    "DoubleParameter",
    "Int64",
    "IntegerParameter",
    "Parameter",
    "walk_parameters",
]

ScaleType = Literal["LINEAR", "LOG", "REVERSE_LOG"]
_SCALE_TO_API = {
    "LINEAR": "UNIT_LINEAR_SCALE",
    "LOG": "UNIT_LOG_SCALE",
    "REVERSE_LOG": "UNIT_REVERSE_LOG_SCALE",
}
Int64 = Annotated[int, Field(ge=-INT64_MAX - 1, le=INT64_MAX)]
_DISCRETE_EPSILON = 1e-10


class _ParameterBase(SpecModel):
    parameter_id: str

    @field_validator("parameter_id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_id("parameter_id", value)

    def _scale_rule(self, scale: str | None, low: float) -> None:
        if scale in ("LOG", "REVERSE_LOG") and not low > 0:
            fail(
                f"scale_type: {scale} scaling needs a strictly positive space "
                f"(parameter {self.parameter_id!r} goes down to {low:g}); raise its lowest value above 0, "
                "or use scale_type LINEAR"
            )

    def _scale_api(self, scale: str | None) -> dict[str, Any]:
        return {"scaleType": _SCALE_TO_API[scale]} if scale is not None else {}


class ConditionalParameter(SpecModel):
    """A child parameter, active when its parent takes one of ``parent_values``."""

    parent_values: tuple[Int64, ...] | tuple[str, ...] | tuple[FiniteFloat, ...]
    parameter: "Parameter"

    @field_validator("parent_values")
    @classmethod
    def _values(cls, value: tuple[Any, ...]) -> tuple[Any, ...]:
        if not value:
            fail(
                "parent_values: at least one parent value is required; list the parent values that enable "
                "the child"
            )
        return value


class _ParentBase(_ParameterBase):
    conditional_parameters: tuple[ConditionalParameter, ...] = ()

    def _check_children(self) -> None:
        seen: dict[str, list[set[Any]]] = {}
        for child in self.conditional_parameters:
            values = child.parent_values
            self._check_parent_values(values)
            child_id = child.parameter.parameter_id
            if child_id == self.parameter_id:
                fail(
                    f"conditional_parameters: child id {child_id!r} repeats its parent's id; give the "
                    "child its own id"
                )
            key_set = {self._normalize(v) for v in values}
            for other in seen.get(child_id, []):
                if other & key_set:
                    fail(
                        f"conditional_parameters: children named {child_id!r} must have disjoint "
                        f"parent_values (overlap {sorted(map(str, other & key_set))}); list each parent "
                        "value under one of them only"
                    )
            seen.setdefault(child_id, []).append(key_set)

    def _normalize(self, value: Any) -> Any:
        return value

    def _check_parent_values(self, values: tuple[Any, ...]) -> None:
        raise NotImplementedError  # pragma: no cover

    def _children_api(self, condition_key: str) -> dict[str, Any]:
        if not self.conditional_parameters:
            return {}
        return {
            "conditionalParameterSpecs": [
                {
                    "parameterSpec": child.parameter.to_api(),
                    condition_key: {"values": list(child.parent_values)},
                }
                for child in self.conditional_parameters
            ]
        }


class DoubleParameter(_ParameterBase):
    """A real-valued parameter in ``[min_value, max_value]``: both bounds inclusive (the v1
    ``DoubleValueSpec``: "Inclusive minimum value", "Inclusive maximum value"), so equal bounds are a
    one-value range."""

    type: Literal["double"] = "double"
    min_value: FiniteFloat
    max_value: FiniteFloat
    scale_type: ScaleType | None = None
    conditional_parameters: tuple[Any, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.min_value <= self.max_value:
            fail(
                f"min_value: must be at most max_value (got {self.min_value:g} > {self.max_value:g} "
                f"for {self.parameter_id!r}; both bounds are inclusive); swap them"
            )
        self._scale_rule(self.scale_type, self.min_value)
        if self.conditional_parameters:
            fail(
                "conditional_parameters: a double parameter cannot have conditional children "
                "(conditions match integer, categorical or discrete parent values); make the parent an "
                "integer, categorical or discrete parameter"
            )
        return self

    def to_api(self) -> dict[str, Any]:
        return {
            "parameterId": self.parameter_id,
            "doubleValueSpec": {"minValue": self.min_value, "maxValue": self.max_value},
            **self._scale_api(self.scale_type),
        }


class IntegerParameter(_ParentBase):
    """An integer parameter in ``[min_value, max_value]``: both bounds inclusive (the v1
    ``IntegerValueSpec``), so ``min_value == max_value`` is a one-value range."""

    type: Literal["integer"] = "integer"
    min_value: int = Field(ge=-INT64_MAX, le=INT64_MAX)
    max_value: int = Field(ge=-INT64_MAX, le=INT64_MAX)
    scale_type: ScaleType | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.min_value <= self.max_value:
            fail(
                f"min_value: must be at most max_value (got {self.min_value} > {self.max_value} "
                f"for {self.parameter_id!r}; both bounds are inclusive); swap them"
            )
        self._scale_rule(self.scale_type, self.min_value)
        self._check_children()
        return self

    def _check_parent_values(self, values: tuple[Any, ...]) -> None:
        for v in values:
            if not isinstance(v, int) or isinstance(v, bool):
                fail(
                    f"parent_values: integer parent {self.parameter_id!r} takes integers (got {v!r}); give "
                    "integers"
                )
            if not self.min_value <= v <= self.max_value:
                fail(
                    f"parent_values: {v} is outside parent {self.parameter_id!r}'s range "
                    f"[{self.min_value}, {self.max_value}]; use values in that range, or widen it"
                )

    def to_api(self) -> dict[str, Any]:
        return {
            "parameterId": self.parameter_id,
            "integerValueSpec": {"minValue": self.min_value, "maxValue": self.max_value},
            **self._scale_api(self.scale_type),
            **self._children_api("parentIntValues"),
        }


class CategoricalParameter(_ParentBase):
    """A parameter taking one of ``values`` (strings)."""

    type: Literal["categorical"] = "categorical"
    values: tuple[str, ...]
    scale_type: None = None

    @field_validator("scale_type", mode="before")
    @classmethod
    def _no_scale(cls, value: Any) -> Any:
        if value is not None:
            fail(f"scale_type: leave unset for categorical parameters (got {value!r}); drop it")
        return value

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.values:
            fail(
                f"values: categorical parameter {self.parameter_id!r} needs at least one value; list its "
                "values"
            )
        if len(set(self.values)) != len(self.values):
            dupes = sorted({v for v in self.values if self.values.count(v) > 1})
            fail(f"values: categorical values must be unique (repeated {dupes}); remove the repeats")
        self._check_children()
        return self

    def _check_parent_values(self, values: tuple[Any, ...]) -> None:
        for v in values:
            if not isinstance(v, str) or v not in self.values:
                fail(
                    f"parent_values: {v!r} is not one of parent {self.parameter_id!r}'s values "
                    f"{list(self.values)}; use one of them, or add it to the parent's values"
                )

    def to_api(self) -> dict[str, Any]:
        return {
            "parameterId": self.parameter_id,
            "categoricalValueSpec": {"values": list(self.values)},
            **self._children_api("parentCategoricalValues"),
        }


class DiscreteParameter(_ParentBase):
    """A numeric parameter taking one of ``values``: increasing, at least 1e-10 apart, at most
    1,000 of them."""

    type: Literal["discrete"] = "discrete"
    values: tuple[FiniteFloat, ...]
    scale_type: ScaleType | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        values = self.values
        if not values:
            fail(
                f"values: discrete parameter {self.parameter_id!r} needs at least one value; list its values"
            )
        if len(values) > 1000:
            fail(
                f"values: a discrete parameter takes at most 1,000 values (got {len(values)}); use an "
                "integer "
                "or double parameter for a range"
            )
        for a, b in zip(values, values[1:], strict=False):
            if not b - a >= _DISCRETE_EPSILON:
                fail(
                    f"values: discrete values must be increasing and at least 1e-10 apart "
                    f"(got {a:g} then {b:g}); sort them and drop repeats"
                )
        self._scale_rule(self.scale_type, values[0])
        self._check_children()
        return self

    def _normalize(self, value: Any) -> Any:
        return min(self.values, key=lambda v: abs(v - value))

    def _check_parent_values(self, values: tuple[Any, ...]) -> None:
        for v in values:
            if isinstance(v, str | bool) or not any(abs(v - x) <= _DISCRETE_EPSILON for x in self.values):
                fail(
                    f"parent_values: {v!r} is not one of parent {self.parameter_id!r}'s values "
                    f"{list(self.values)}; use one of them, or add it to the parent's values"
                )

    def to_api(self) -> dict[str, Any]:
        return {
            "parameterId": self.parameter_id,
            "discreteValueSpec": {"values": list(self.values)},
            **self._scale_api(self.scale_type),
            **self._children_api("parentDiscreteValues"),
        }


Parameter = Annotated[
    DoubleParameter | IntegerParameter | CategoricalParameter | DiscreteParameter,
    Field(discriminator="type"),
]
# ConditionalParameter's ``parameter: Parameter`` is resolved when its schema is first built (the specs
# defer that to first use), by then from this module's namespace: no model_rebuild() at import.


def walk_parameters(params: tuple[Any, ...], depth: int = 0) -> Iterator[tuple[int, Any]]:
    """Every parameter with its depth (0 at the top), conditional children after their parent."""
    for param in params:
        yield depth, param
        for child in getattr(param, "conditional_parameters", ()):
            if isinstance(child, ConditionalParameter):
                yield from walk_parameters((child.parameter,), depth + 1)
