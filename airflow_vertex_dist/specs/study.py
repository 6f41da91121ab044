"""The hyperparameter study: metrics, parameters (with conditional children), search algorithm and
early stopping, rendered as a v1 ``StudySpec``.

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

from airflow_vertex_dist.specs import _api
from airflow_vertex_dist.specs._base import Duration, SpecModel, duration_to_api, fail

__all__ = [
    "CategoricalParameter",
    "ConditionalParameter",
    "ConvexAutomatedStopping",
    "DecayCurveAutomatedStopping",
    "DiscreteParameter",
    "DoubleParameter",
    "IntegerParameter",
    "MedianAutomatedStopping",
    "Metric",
    "Parameter",
    "SafetyMetricConfig",
    "Study",
    "StudyStoppingConfig",
    "StudyTimeConstraint",
]

ScaleType = Literal["LINEAR", "LOG", "REVERSE_LOG"]
_SCALE_TO_API = {
    "LINEAR": "UNIT_LINEAR_SCALE",
    "LOG": "UNIT_LOG_SCALE",
    "REVERSE_LOG": "UNIT_REVERSE_LOG_SCALE",
}
_SCALE_FROM_API = {v: k for k, v in _SCALE_TO_API.items()}
_INT64 = 2**63 - 1
Int64 = Annotated[int, Field(ge=-_INT64 - 1, le=_INT64)]
_DISCRETE_EPSILON = 1e-10


def _check_id(field: str, value: str) -> str:
    if not value or any(c.isspace() for c in value):
        fail(f"{field}: must be non-empty and contain no whitespace (got {value!r})")
    if len(value) > 128:
        fail(f"{field}: at most 128 characters (got {len(value)})")
    return value


class SafetyMetricConfig(SpecModel):
    """v1 ``MetricSpec.SafetyMetricConfig``: marks a metric as a safety metric. The emulator accepts
    it and does not use it (its search does not model safety)."""

    safety_threshold: FiniteFloat = 0.0
    desired_min_safe_trials_fraction: FiniteFloat | None = None

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"safetyThreshold": self.safety_threshold}
        if self.desired_min_safe_trials_fraction is not None:
            out["desiredMinSafeTrialsFraction"] = self.desired_min_safe_trials_fraction
        return out


class Metric(SpecModel):
    """A metric the study optimizes; the training code reports it with cloudml-hypertune."""

    metric_id: str
    goal: Literal["MAXIMIZE", "MINIMIZE"]
    safety_config: SafetyMetricConfig | None = None

    @field_validator("metric_id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _check_id("metric_id", value)

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metricId": self.metric_id, "goal": self.goal}
        if self.safety_config is not None:
            out["safetyConfig"] = self.safety_config.to_api()
        return out


class _ParameterBase(SpecModel):
    parameter_id: str

    @field_validator("parameter_id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _check_id("parameter_id", value)

    def _scale_rule(self, scale: str | None, low: float) -> None:
        if scale in ("LOG", "REVERSE_LOG") and not low > 0:
            fail(
                f"scale_type: {scale} scaling needs a strictly positive space "
                f"(parameter {self.parameter_id!r} goes down to {low:g})"
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
            fail("parent_values: at least one parent value is required")
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
                fail(f"conditional_parameters: child id {child_id!r} repeats its parent's id")
            key_set = {self._normalize(v) for v in values}
            for other in seen.get(child_id, []):
                if other & key_set:
                    fail(
                        f"conditional_parameters: children named {child_id!r} must have disjoint "
                        f"parent_values (overlap {sorted(map(str, other & key_set))})"
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
    """A real-valued parameter in ``[min_value, max_value]``."""

    type: Literal["double"] = "double"
    min_value: FiniteFloat
    max_value: FiniteFloat
    scale_type: ScaleType | None = None
    conditional_parameters: tuple[Any, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.min_value < self.max_value:
            fail(
                f"min_value: must be below max_value (got {self.min_value:g} >= {self.max_value:g} "
                f"for {self.parameter_id!r})"
            )
        self._scale_rule(self.scale_type, self.min_value)
        if self.conditional_parameters:
            fail(
                "conditional_parameters: a double parameter cannot have conditional children "
                "(conditions match integer, categorical or discrete parent values)"
            )
        return self

    def to_api(self) -> dict[str, Any]:
        return {
            "parameterId": self.parameter_id,
            "doubleValueSpec": {"minValue": self.min_value, "maxValue": self.max_value},
            **self._scale_api(self.scale_type),
        }


class IntegerParameter(_ParentBase):
    """An integer parameter in ``[min_value, max_value]``."""

    type: Literal["integer"] = "integer"
    min_value: int = Field(ge=-_INT64, le=_INT64)
    max_value: int = Field(ge=-_INT64, le=_INT64)
    scale_type: ScaleType | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.min_value < self.max_value:
            fail(
                f"min_value: must be below max_value (got {self.min_value} >= {self.max_value} "
                f"for {self.parameter_id!r})"
            )
        self._scale_rule(self.scale_type, self.min_value)
        self._check_children()
        return self

    def _check_parent_values(self, values: tuple[Any, ...]) -> None:
        for v in values:
            if not isinstance(v, int) or isinstance(v, bool):
                fail(f"parent_values: integer parent {self.parameter_id!r} takes integers (got {v!r})")
            if not self.min_value <= v <= self.max_value:
                fail(
                    f"parent_values: {v} is outside parent {self.parameter_id!r}'s range "
                    f"[{self.min_value}, {self.max_value}]"
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
            fail(f"scale_type: leave unset for categorical parameters (got {value!r})")
        return value

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.values:
            fail(f"values: categorical parameter {self.parameter_id!r} needs at least one value")
        if len(set(self.values)) != len(self.values):
            dupes = sorted({v for v in self.values if self.values.count(v) > 1})
            fail(f"values: categorical values must be unique (repeated {dupes})")
        self._check_children()
        return self

    def _check_parent_values(self, values: tuple[Any, ...]) -> None:
        for v in values:
            if not isinstance(v, str) or v not in self.values:
                fail(
                    f"parent_values: {v!r} is not one of parent {self.parameter_id!r}'s values "
                    f"{list(self.values)}"
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
            fail(f"values: discrete parameter {self.parameter_id!r} needs at least one value")
        if len(values) > 1000:
            fail(f"values: a discrete parameter takes at most 1,000 values (got {len(values)})")
        for a, b in zip(values, values[1:], strict=False):
            if not b - a >= _DISCRETE_EPSILON:
                fail(
                    f"values: discrete values must be increasing and at least 1e-10 apart "
                    f"(got {a:g} then {b:g})"
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
                    f"{list(self.values)}"
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


def _walk(params: tuple[Any, ...], depth: int = 0) -> Iterator[tuple[int, Any]]:
    for param in params:
        yield depth, param
        for child in getattr(param, "conditional_parameters", ()):
            if isinstance(child, ConditionalParameter):
                yield from _walk((child.parameter,), depth + 1)


class MedianAutomatedStopping(SpecModel):
    """Stop a trial whose best objective is below the median of completed trials."""

    use_elapsed_duration: bool = False

    def to_api(self) -> dict[str, Any]:
        return {"useElapsedDuration": True} if self.use_elapsed_duration else {}


class DecayCurveAutomatedStopping(SpecModel):
    """Stop a trial unlikely to beat the best so far (Gaussian-process decay curve)."""

    use_elapsed_duration: bool = False

    def to_api(self) -> dict[str, Any]:
        return {"useElapsedDuration": True} if self.use_elapsed_duration else {}


class ConvexAutomatedStopping(SpecModel):
    """Convex early stopping rule."""

    max_step_count: int | None = Field(default=None, ge=1, le=_INT64)
    min_step_count: int | None = Field(default=None, ge=0, le=_INT64)
    min_measurement_count: int | None = Field(default=None, ge=1, le=_INT64)
    learning_rate_parameter_name: str | None = None
    use_elapsed_duration: bool = False
    update_all_stopped_trials: bool | None = None

    @field_validator("learning_rate_parameter_name")
    @classmethod
    def _lr_name(cls, value: str | None) -> str | None:
        return None if value is None else _check_id("learning_rate_parameter_name", value)

    @model_validator(mode="after")
    def _check(self) -> Self:
        lo, hi = self.min_step_count, self.max_step_count
        if lo is not None and hi is not None and lo > hi:
            fail(f"min_step_count: must not exceed max_step_count (got {lo} > {hi})")
        return self

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, key in (
            ("max_step_count", "maxStepCount"),
            ("min_step_count", "minStepCount"),
            ("min_measurement_count", "minMeasurementCount"),
            ("learning_rate_parameter_name", "learningRateParameterName"),
            ("update_all_stopped_trials", "updateAllStoppedTrials"),
        ):
            value = getattr(self, name)
            if value is not None:
                out[key] = value
        if self.use_elapsed_duration:
            out["useElapsedDuration"] = True
        return out


class StudyTimeConstraint(SpecModel):
    """v1 ``StudyTimeConstraint``: a duration, or an end time (RFC 3339), not both."""

    max_duration: Duration | None = None
    end_time: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.max_duration is not None and self.end_time is not None:
            fail("max_duration/end_time: set one of them, not both (a proto oneof)")
        return self

    def to_api(self) -> dict[str, Any]:
        if self.max_duration is not None:
            return {"maxDuration": duration_to_api(self.max_duration)}
        return {"endTime": self.end_time} if self.end_time is not None else {}


class StudyStoppingConfig(SpecModel):
    """v1 ``StudySpec.StudyStoppingConfig``: when the whole study stops early. The emulator accepts
    it and does not apply it: a study runs ``max_trial_count`` trials."""

    should_stop_asap: bool | None = None
    minimum_runtime_constraint: StudyTimeConstraint | None = None
    maximum_runtime_constraint: StudyTimeConstraint | None = None
    min_num_trials: int | None = Field(default=None, ge=-(2**31), le=2**31 - 1)
    max_num_trials: int | None = Field(default=None, ge=-(2**31), le=2**31 - 1)
    max_num_trials_no_progress: int | None = Field(default=None, ge=-(2**31), le=2**31 - 1)
    max_duration_no_progress: Duration | None = None

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.should_stop_asap is not None:
            out["shouldStopAsap"] = self.should_stop_asap
        for name, key in (
            ("minimum_runtime_constraint", "minimumRuntimeConstraint"),
            ("maximum_runtime_constraint", "maximumRuntimeConstraint"),
        ):
            value = getattr(self, name)
            if value is not None:
                out[key] = value.to_api()
        for name, key in (
            ("min_num_trials", "minNumTrials"),
            ("max_num_trials", "maxNumTrials"),
            ("max_num_trials_no_progress", "maxNumTrialsNoProgress"),
        ):
            if getattr(self, name) is not None:
                out[key] = getattr(self, name)
        if self.max_duration_no_progress is not None:
            out["maxDurationNoProgress"] = duration_to_api(self.max_duration_no_progress)
        return out


class Study(SpecModel):
    """What to optimize and how to search (v1 ``StudySpec``).

    ``algorithm``: ``None`` is the service default (Bayesian optimization), or ``GRID_SEARCH``
    (integer, categorical and discrete parameters only) or ``RANDOM_SEARCH``.
    """

    metrics: tuple[Metric, ...]
    parameters: tuple[Parameter, ...]
    algorithm: Literal["GRID_SEARCH", "RANDOM_SEARCH"] | None = None
    measurement_selection_type: Literal["LAST_MEASUREMENT", "BEST_MEASUREMENT"] | None = None
    median_automated_stopping: MedianAutomatedStopping | None = None
    decay_curve_stopping: DecayCurveAutomatedStopping | None = None
    convex_automated_stopping: ConvexAutomatedStopping | None = None
    observation_noise: Literal["LOW", "HIGH"] | None = None
    study_stopping_config: StudyStoppingConfig | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.metrics:
            fail("study.metrics: at least one metric is required")
        ids = [m.metric_id for m in self.metrics]
        if len(set(ids)) != len(ids):
            fail(f"study.metrics: metric ids must be unique (got {ids})")
        if not self.parameters:
            fail("study.parameters: at least one parameter is required")
        top = [p.parameter_id for p in self.parameters]
        if len(set(top)) != len(top):
            fail(f"study.parameters: parameter ids must be unique (got {top})")
        for depth, param in _walk(self.parameters):
            if depth and param.parameter_id in top:
                fail(
                    f"study.parameters: conditional parameter {param.parameter_id!r} repeats a "
                    "top-level parameter id"
                )
            if self.algorithm == "GRID_SEARCH" and isinstance(param, DoubleParameter):
                fail(
                    f"study.algorithm: GRID_SEARCH takes only integer, categorical and discrete "
                    f"parameters (got double parameter {param.parameter_id!r})"
                )
        stops = [
            n
            for n in ("median_automated_stopping", "decay_curve_stopping", "convex_automated_stopping")
            if getattr(self, n) is not None
        ]
        if len(stops) > 1:
            fail(f"study: at most one automated stopping rule (got {', '.join(stops)})")
        return self

    def parameter_ids(self) -> list[str]:
        """Every parameter id, conditional ones included, in definition order, without repeats."""
        return list(dict.fromkeys(p.parameter_id for _, p in _walk(self.parameters)))

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metrics": [m.to_api() for m in self.metrics],
            "parameters": [p.to_api() for p in self.parameters],
        }
        if self.algorithm is not None:
            out["algorithm"] = self.algorithm
        if self.measurement_selection_type is not None:
            out["measurementSelectionType"] = self.measurement_selection_type
        if self.median_automated_stopping is not None:
            out["medianAutomatedStoppingSpec"] = self.median_automated_stopping.to_api()
        if self.decay_curve_stopping is not None:
            out["decayCurveStoppingSpec"] = self.decay_curve_stopping.to_api()
        if self.convex_automated_stopping is not None:
            out["convexAutomatedStoppingSpec"] = self.convex_automated_stopping.to_api()
        if self.observation_noise is not None:
            out["observationNoise"] = self.observation_noise
        if self.study_stopping_config is not None:
            out["studyStoppingConfig"] = self.study_stopping_config.to_api()
        return out

    @classmethod
    def spec_from_api(cls, title: str, loc: tuple[str | int, ...], raw: Any) -> dict[str, Any]:
        """``StudySpec`` JSON -> a :class:`Study` dict (validated by the caller)."""
        spec = _api.as_dict(title, loc, raw if raw is not None else {})
        data: dict[str, Any] = {}
        known = {
            "metrics",
            "parameters",
            "algorithm",
            "measurementSelectionType",
            "medianAutomatedStoppingSpec",
            "decayCurveStoppingSpec",
            "convexAutomatedStoppingSpec",
            "observationNoise",
            "studyStoppingConfig",
        }
        _api.unknown_keys(spec, known, data, cls.model_fields)
        metrics = []
        for i, m in enumerate(_api.as_list(title, (*loc, "metrics"), spec.get("metrics", []))):
            m = dict(_api.as_dict(title, (*loc, "metrics", i), m))
            item: dict[str, Any] = {}
            _api.unknown_keys(m, {"metricId", "goal", "safetyConfig"}, item, Metric.model_fields)
            item["metric_id"] = m.get("metricId", "")  # proto3: an omitted string is ""
            goal = _api.enum_name(m.get("goal"), _api.GOAL_NUMBERS)
            if goal is not None:
                item["goal"] = goal
            if m.get("safetyConfig") is not None:
                safety = _api.as_dict(title, (*loc, "metrics", i, "safety_config"), m["safetyConfig"])
                item["safety_config"] = {_api.snake(k): v for k, v in safety.items()}
            metrics.append(item)
        data["metrics"] = metrics
        params = _api.as_list(title, (*loc, "parameters"), spec.get("parameters", []))
        data["parameters"] = [
            _parameter_from_api(title, (*loc, "parameters", i), p) for i, p in enumerate(params)
        ]
        for key, name, numbers in (
            ("algorithm", "algorithm", _api.ALGORITHM_NUMBERS),
            ("measurementSelectionType", "measurement_selection_type", _api.MEASUREMENT_NUMBERS),
            ("observationNoise", "observation_noise", _api.OBSERVATION_NOISE_NUMBERS),
        ):
            value = _api.enum_name(spec.get(key), numbers)
            if value is not None:
                data[name] = value
        if spec.get("studyStoppingConfig") is not None:
            stopping = _api.as_dict(title, (*loc, "study_stopping_config"), spec["studyStoppingConfig"])
            data["study_stopping_config"] = _snake_keys(stopping)
        for key, name in (
            ("medianAutomatedStoppingSpec", "median_automated_stopping"),
            ("decayCurveStoppingSpec", "decay_curve_stopping"),
            ("convexAutomatedStoppingSpec", "convex_automated_stopping"),
        ):
            if key in spec and spec[key] is not None:
                stop = _api.as_dict(title, (*loc, name), spec[key])
                # proto3: 0, "" and false are the same as unset ("If not defined, it will learn it
                # from the completed trials"), except the optional updateAllStoppedTrials.
                data[name] = {
                    _api.snake(k): _api.as_int(v)
                    for k, v in stop.items()
                    if k == "updateAllStoppedTrials" or v not in (False, "", 0, "0")
                }
        return data


def _snake_keys(value: Any) -> Any:
    """Recursively snake_case the keys of a plain JSON object (values unchanged)."""
    if isinstance(value, dict):
        return {_api.snake(str(k)): _snake_keys(v) for k, v in value.items()}
    return value


_PARAM_FIELDS = {
    *DoubleParameter.model_fields,
    *IntegerParameter.model_fields,
    *CategoricalParameter.model_fields,
    *DiscreteParameter.model_fields,
}


def _parameter_from_api(title: str, loc: tuple[str | int, ...], raw: Any) -> dict[str, Any]:
    spec = _api.as_dict(title, loc, raw)
    kinds = {
        "doubleValueSpec": "double",
        "integerValueSpec": "integer",
        "categoricalValueSpec": "categorical",
        "discreteValueSpec": "discrete",
    }
    present = [k for k in kinds if k in spec and spec[k] is not None]
    if len(present) != 1:
        _api.reject(
            title,
            loc,
            "parameter: exactly one of doubleValueSpec, integerValueSpec, categoricalValueSpec or "
            f"discreteValueSpec is required (got {present or 'none'})",
            spec,
        )
    data: dict[str, Any] = {"type": kinds[present[0]]}
    _api.unknown_keys(
        spec, {*kinds, "parameterId", "scaleType", "conditionalParameterSpecs"}, data, _PARAM_FIELDS
    )
    data["parameter_id"] = spec.get("parameterId", "")  # proto3: an omitted string is ""
    scale = _api.enum_name(spec.get("scaleType"), _api.SCALE_NUMBERS)
    if scale is not None:
        data["scale_type"] = _SCALE_FROM_API.get(scale, scale) if isinstance(scale, str) else scale
    value_spec = _api.as_dict(title, (*loc, _api.snake(present[0])), spec[present[0]])
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
                "reference: \"Currently only supported by the Vertex AI Vizier service. Not supported by "
                "HyperparameterTuningJob or TrainingPipeline.\")",
                raw_value,
            )
        elif data["type"] == "integer" and key in ("minValue", "maxValue"):
            data[_api.snake(key)] = _api.as_int(raw_value)
        else:
            data[_api.snake(key)] = raw_value
    children = []
    raw_children = spec.get("conditionalParameterSpecs")
    raw_children = (
        [] if raw_children is None else _api.as_list(title, (*loc, "conditional_parameters"), raw_children)
    )
    for i, child in enumerate(raw_children):
        child = _api.as_dict(title, (*loc, "conditional_parameters", i), child)
        item: dict[str, Any] = {}
        conditions = ("parentIntValues", "parentCategoricalValues", "parentDiscreteValues")
        _api.unknown_keys(child, {"parameterSpec", *conditions}, item, ConditionalParameter.model_fields)
        expected = {"integer": "parentIntValues", "categorical": "parentCategoricalValues"}.get(
            data["type"], "parentDiscreteValues"
        )
        for key in conditions:
            if key in child and child[key] is not None:
                if key != expected:
                    _api.reject(
                        title,
                        (*loc, "conditional_parameters", i),
                        f"conditional_parameters: a {data['type']} parent matches its children with "
                        f"{expected} (got {key})",
                        child,
                    )
                cond = _api.as_dict(title, (*loc, "conditional_parameters", i, _api.snake(key)), child[key])
                values = cond.get("values", [])
                if key == "parentIntValues" and isinstance(values, list):
                    values = [_api.as_int(v) for v in values]
                item["parent_values"] = values
        if "parameterSpec" in child:
            item["parameter"] = _parameter_from_api(
                title, (*loc, "conditional_parameters", i, "parameter"), child["parameterSpec"]
            )
        children.append(item)
    if children:
        data["conditional_parameters"] = children
    return data
