"""Reading a v1 ``StudySpec.ParameterSpec`` (REST JSON, camelCase) into the fields of a study
parameter (``specs.parameters``), conditional children included: the conversion behind the study's
part of ``HyperparameterTuningJob.from_api``. The models then apply every rule."""

from __future__ import annotations

from typing import Any

from airflow_vertex_dist.specs import _api
from airflow_vertex_dist.specs.parameters import (
    _SCALE_TO_API,
    CategoricalParameter,
    ConditionalParameter,
    DiscreteParameter,
    DoubleParameter,
    IntegerParameter,
)

__all__ = ["parameter_from_api"]

_SCALE_FROM_API = {v: k for k, v in _SCALE_TO_API.items()}
_KINDS = {
    "doubleValueSpec": "double",
    "integerValueSpec": "integer",
    "categoricalValueSpec": "categorical",
    "discreteValueSpec": "discrete",
}
_CONDITIONS = ("parentIntValues", "parentCategoricalValues", "parentDiscreteValues")
_PARAM_FIELDS = {
    *DoubleParameter.model_fields,
    *IntegerParameter.model_fields,
    *CategoricalParameter.model_fields,
    *DiscreteParameter.model_fields,
}

Loc = tuple[str | int, ...]


def parameter_from_api(title: str, loc: Loc, raw: Any) -> dict[str, Any]:
    """The fields of one parameter (``type`` names its kind) from its v1 JSON at ``loc``; a
    ``pydantic.ValidationError`` (``_api.reject``) naming the path when the JSON cannot be one."""
    spec = _api.as_dict(title, loc, raw)
    present = [k for k in _KINDS if k in spec and spec[k] is not None]
    if len(present) != 1:
        _api.reject(
            title,
            loc,
            "parameter: exactly one of doubleValueSpec, integerValueSpec, categoricalValueSpec or "
            f"discreteValueSpec is required (got {present or 'none'})",
            spec,
        )
    data: dict[str, Any] = {"type": _KINDS[present[0]]}
    _api.unknown_keys(
        spec, {*_KINDS, "parameterId", "scaleType", "conditionalParameterSpecs"}, data, _PARAM_FIELDS
    )
    data["parameter_id"] = spec.get("parameterId", "")  # proto3: an omitted string is ""
    scale = _api.enum_name(spec.get("scaleType"), _api.SCALE_NUMBERS)
    if scale is not None:
        data["scale_type"] = _SCALE_FROM_API.get(scale, scale) if isinstance(scale, str) else scale
    value_spec = _api.as_dict(title, (*loc, _api.snake(present[0])), spec[present[0]])
    _value_fields(title, loc, data, value_spec)
    raw_children = spec.get("conditionalParameterSpecs")
    raw_children = (
        [] if raw_children is None else _api.as_list(title, (*loc, "conditional_parameters"), raw_children)
    )
    children = [
        _child_from_api(title, (*loc, "conditional_parameters", i), data["type"], child)
        for i, child in enumerate(raw_children)
    ]
    if children:
        data["conditional_parameters"] = children
    return data


def _value_fields(title: str, loc: Loc, data: dict[str, Any], value_spec: dict[str, Any]) -> None:
    """The value spec's fields into ``data`` (snake_case); an integer's bounds as ints."""
    if data["type"] in ("double", "integer"):
        # proto3: an omitted minValue/maxValue is 0 (the wire never carries a zero), so [0, 1] is
        # {"maxValue": 1} once it has been through the proto.
        value_spec = {"minValue": 0, "maxValue": 0, **value_spec}
    for key, raw_value in value_spec.items():
        if key == "defaultValue":
            _api.reject(
                title,
                (*loc, "default_value"),
                "default_value: not supported by HyperparameterTuningJob (the v1 StudySpec.ParameterSpec "
                'reference: "Currently only supported by the Vertex AI Vizier service. Not supported by '
                'HyperparameterTuningJob or TrainingPipeline."); leave it out',
                raw_value,
            )
        elif data["type"] == "integer" and key in ("minValue", "maxValue"):
            data[_api.snake(key)] = _api.as_int(raw_value)
        else:
            data[_api.snake(key)] = raw_value


def _child_from_api(title: str, loc: Loc, parent_type: str, raw: Any) -> dict[str, Any]:
    """One ``conditionalParameterSpecs`` item at ``loc``: its parent values (in the condition the
    parent's type matches with) and its parameter."""
    child = _api.as_dict(title, loc, raw)
    item: dict[str, Any] = {}
    _api.unknown_keys(child, {"parameterSpec", *_CONDITIONS}, item, ConditionalParameter.model_fields)
    expected = {"integer": "parentIntValues", "categorical": "parentCategoricalValues"}.get(
        parent_type, "parentDiscreteValues"
    )
    for key in _CONDITIONS:
        if key in child and child[key] is not None:
            if key != expected:
                _api.reject(
                    title,
                    loc,
                    f"conditional_parameters: a {parent_type} parent matches its children with "
                    f"{expected} (got {key})",
                    child,
                )
            cond = _api.as_dict(title, (*loc, _api.snake(key)), child[key])
            values = cond.get("values", [])
            if key == "parentIntValues" and isinstance(values, list):
                values = [_api.as_int(v) for v in values]
            item["parent_values"] = values
    if "parameterSpec" in child:
        item["parameter"] = parameter_from_api(title, (*loc, "parameter"), child["parameterSpec"])
    return item
