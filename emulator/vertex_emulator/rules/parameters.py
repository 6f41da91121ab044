"""Rules on a study's parameters (v1 ``StudySpec.ParameterSpec``), each from its field's comment in
``google/cloud/aiplatform/v1/study.proto``:

* ``value-spec``: ``parameter_value_spec`` is a oneof of the double, integer, categorical and discrete
  specs: a parameter without one has no values to try.
* ``bounds``: ``DoubleValueSpec`` / ``IntegerValueSpec``: "Inclusive minimum value of the parameter",
  "Inclusive maximum value": ``min_value <= max_value``; equal bounds are a one-value range.
* ``log-scale``: ``ScaleType.UNIT_LOG_SCALE`` / ``UNIT_REVERSE_LOG_SCALE``: "The entire feasible space
  must be strictly positive."
* ``categorical-scale``: ``scale_type``: "Leave unset for CATEGORICAL parameters."
* ``discrete-values``: ``DiscreteValueSpec.values``: "The list should be in increasing order and at least
  1e-10 apart. [...] This list should not contain more than 1,000 values."
* ``categorical-values``: ``CategoricalValueSpec.values``, "The list of possible categories": a category
  listed twice is refused (inferred; not verified against the service).
* ``conditions``: ``ConditionalParameterSpec``: a child matches its parent with ``parent_discrete_values``
  ("values of the parent parameter of 'DISCRETE' type. All values must exist in discrete_value_spec of
  parent parameter. The Epsilon of the value matching is 1e-10"), ``parent_int_values`` ("All values must
  lie in integer_value_spec of parent parameter") or ``parent_categorical_values`` ("All values must exist
  in categorical_value_spec"); there is no condition on a DOUBLE parent. And ``conditional_parameter_specs``:
  "If two items in conditional_parameter_specs have the same name, they must have disjoint
  parent_value_condition."
* ``default-value``: every ``*ValueSpec.default_value``: "Currently only supported by the Vertex AI Vizier
  service. Not supported by HyperparameterTuningJob or TrainingPipeline."
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from vertex_emulator.rules._common import enum_name, problem

__all__ = ["MAX_DISCRETE_VALUES", "parameter_problems", "walk_parameters"]

MAX_DISCRETE_VALUES = 1000
_EPSILON = 1e-10
_CONDITION_OF = {
    "integer_value_spec": "parent_int_values",
    "categorical_value_spec": "parent_categorical_values",
    "discrete_value_spec": "parent_discrete_values",
}


def _walk_one(param: Any, where: str, depth: int) -> Iterator[tuple[int, str, Any]]:
    yield depth, where, param
    for index, child in enumerate(param.conditional_parameter_specs):
        if child.HasField("parameter_spec"):
            child_path = f"{where}.conditional_parameter_specs[{index}].parameter_spec"
            yield from _walk_one(child.parameter_spec, child_path, depth + 1)


def walk_parameters(params: Any, path: str) -> Iterator[tuple[int, str, Any]]:
    """Every raw ``ParameterSpec`` with its depth (0 at the top) and path, children after their parent."""
    for index, param in enumerate(params):
        yield from _walk_one(param, f"{path}[{index}]", 0)


def _range_problems(spec: Any, kind: str, scale: str, where: str) -> tuple[list[str], float | None]:
    """Bounds or values of one value spec, and the lowest value of its space (for the scale rule)."""
    out: list[str] = []
    if spec.HasField("default_value"):
        out.append(
            problem(
                f"{where}.default_value",
                "not supported by HyperparameterTuningJob (only by the Vertex AI Vizier service)",
            )
        )
    if kind in ("double_value_spec", "integer_value_spec"):
        if spec.min_value > spec.max_value:
            out.append(
                problem(
                    f"{where}.min_value",
                    f"must be at most max_value (got {spec.min_value:g} > {spec.max_value:g}); both are "
                    "inclusive",
                )
            )
        return out, float(spec.min_value)
    values = list(spec.values)
    if kind == "categorical_value_spec":
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            out.append(problem(f"{where}.values", f"categories must be unique (repeated {repeated})"))
        if scale != "SCALE_TYPE_UNSPECIFIED":
            out.append(
                problem(where.rsplit(".", 1)[0] + ".scale_type", "leave unset for CATEGORICAL parameters")
            )
        return out, None
    if len(values) > MAX_DISCRETE_VALUES:
        out.append(problem(f"{where}.values", f"at most {MAX_DISCRETE_VALUES} values (got {len(values)})"))
    for low, high in zip(values, values[1:], strict=False):
        if not high - low >= _EPSILON:
            out.append(
                problem(
                    f"{where}.values",
                    f"must be in increasing order and at least 1e-10 apart (got {low:g} then {high:g})",
                )
            )
            break
    return out, (min(values) if values else None)


def _condition_problems(param: Any, kind: str | None, where: str) -> list[str]:
    out: list[str] = []
    seen: dict[str, list[set[Any]]] = {}
    spec: Any = getattr(param, kind) if kind else None
    for index, child in enumerate(param.conditional_parameter_specs):
        child_where = f"{where}.conditional_parameter_specs[{index}]"
        condition = child.WhichOneof("parent_value_condition")
        expected = _CONDITION_OF.get(kind or "")
        if condition is None:
            out.append(problem(child_where, "a parent value condition is required"))
            continue
        if expected is None:
            out.append(
                problem(
                    child_where,
                    "a DOUBLE parameter cannot have conditional parameters (conditions match INTEGER, "
                    "CATEGORICAL or DISCRETE parents)",
                )
            )
            continue
        if condition != expected:
            out.append(
                problem(f"{child_where}.{condition}", f"this parent matches its children with {expected}")
            )
            continue
        values = list(getattr(child, condition).values)
        keys: set[Any] = set()
        for value in values:
            if condition == "parent_int_values":
                ok = spec.min_value <= value <= spec.max_value
                keys.add(value)
            elif condition == "parent_categorical_values":
                ok = value in spec.values
                keys.add(value)
            else:
                near = [x for x in spec.values if abs(x - value) <= _EPSILON]
                ok = bool(near)
                keys.add(near[0] if near else value)
            if not ok:
                out.append(
                    problem(
                        f"{child_where}.{condition}.values",
                        f"{value!r} is not a value of the parent parameter {param.parameter_id!r}",
                    )
                )
        child_id = child.parameter_spec.parameter_id
        for other in seen.get(child_id, []):
            if other & keys:
                out.append(
                    problem(
                        f"{child_where}.{condition}",
                        f"conditional parameters named {child_id!r} must have disjoint parent values "
                        f"(both match {sorted(map(str, other & keys))})",
                    )
                )
        seen.setdefault(child_id, []).append(keys)
    return out


def parameter_problems(param: Any, path: str) -> list[str]:
    """The rules of one raw ``ParameterSpec`` (its own values and its children's conditions)."""
    out: list[str] = []
    kind = param.WhichOneof("parameter_value_spec")
    scale = enum_name(param, "scale_type")
    if kind is None:
        out.append(
            problem(
                path,
                "one of double_value_spec, integer_value_spec, categorical_value_spec or discrete_value_spec "
                "is required",
            )
        )
    else:
        found, low = _range_problems(getattr(param, kind), kind, scale, f"{path}.{kind}")
        out.extend(found)
        if scale in ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE") and low is not None and not low > 0:
            out.append(
                problem(
                    f"{path}.scale_type",
                    f"{scale} needs a strictly positive feasible space (parameter {param.parameter_id!r} "
                    "goes "
                    f"down to {low:g})",
                )
            )
        if scale.isdigit():
            out.append(problem(f"{path}.scale_type", f"{scale} is not a ScaleType value"))
    out.extend(_condition_problems(param, kind, path))
    return out
