"""A trial's parameter values with the type its study gives them: an integer parameter's value is an int.

The v1 ``Trial.Parameter.value`` is a ``google.protobuf.Value``: "``number_value`` will be set if a
parameter defined in StudySpec is in type 'INTEGER', 'DOUBLE' or 'DISCRETE'" (study.proto), and a
``Value``'s number is a double, so the REST JSON and the client's dicts hold ``5.0`` for an integer
parameter set to 5. The study spec says which parameters take whole numbers only:

* ``integerValueSpec``: an INTEGER parameter, always;
* ``discreteValueSpec``: a DISCRETE parameter whose listed values are all whole numbers
  (``[32, 64, 128]``); one with a fraction among them (``[0.5, 1, 2]``) stays a float;

conditional parameters (``conditionalParameterSpecs[].parameterSpec``) included. A parameter the
study spec does not describe keeps the value as it came. Pure: standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["typed_parameters", "typed_value", "whole_number_parameters"]


def _whole(value: Any) -> bool:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return math.isfinite(number) and number.is_integer()


def _specs(parameters: Any) -> Iterable[Mapping[str, Any]]:
    """Every parameter spec of a study, the conditional ones under their parents included."""
    pending = list(parameters) if isinstance(parameters, list | tuple) else []
    while pending:
        spec = pending.pop()
        if not isinstance(spec, Mapping):
            continue
        yield spec
        for child in spec.get("conditionalParameterSpecs") or []:
            if isinstance(child, Mapping):
                pending.append(child.get("parameterSpec"))


def whole_number_parameters(study_spec: Any) -> frozenset[str]:
    """The ids of the parameters of ``study_spec`` (a v1 ``StudySpec`` as JSON) whose values are whole
    numbers: INTEGER ones, and DISCRETE ones listing whole numbers only."""
    if not isinstance(study_spec, Mapping):
        return frozenset()
    ids: set[str] = set()
    for spec in _specs(study_spec.get("parameters")):
        pid = spec.get("parameterId")
        if not isinstance(pid, str):
            continue
        if isinstance(spec.get("integerValueSpec"), Mapping):
            ids.add(pid)
            continue
        discrete = spec.get("discreteValueSpec")
        if isinstance(discrete, Mapping):
            values = discrete.get("values")
            if isinstance(values, list | tuple) and values and all(_whole(v) for v in values):
                ids.add(pid)
    return frozenset(ids)


def typed_value(value: Any, whole: bool) -> Any:
    """``value`` as an ``int`` when ``whole`` and it is a whole float (``5.0`` -> ``5``); else as it is."""
    if whole and isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def typed_parameters(parameters: Any, whole_ids: frozenset[str]) -> Any:
    """A trial's ``parameters`` list (``[{"parameterId", "value"}]``) with the values of ``whole_ids``
    as ints; the other entries and keys as they are."""
    if not isinstance(parameters, list | tuple):
        return parameters
    out: list[Any] = []
    for param in parameters:
        if isinstance(param, Mapping) and param.get("parameterId") in whole_ids and "value" in param:
            param = {**param, "value": typed_value(param["value"], True)}
        out.append(param)
    return out
