"""The hyperparameter study: metrics, parameters (with conditional children: ``parameters.py``), search
algorithm and early stopping (``stopping.py``), rendered as a v1 ``StudySpec``.

In a dict or YAML file each parameter names its kind in ``type``: ``"double"``, ``"integer"``,
``"categorical"`` or ``"discrete"``. Conditional children hang under a parent as
``conditional_parameters: [{parent_values: [...], parameter: {...}}]``.
"""

# No ``from __future__ import annotations`` in the modules that define spec models, unlike the rest of
# the package: with it, pydantic compiles and evaluates every field's annotation string when the model
# classes are created, on every DAG parse -- about a fifth of this package's parse cost (some 20 M of
# 115 M instructions for the benchmark's DAG file). Forward references are quoted instead.

from typing import Any, Literal

from pydantic import FiniteFloat, field_validator, model_validator
from typing_extensions import Self  # typing.Self is Python 3.11+; the package supports 3.10

from airflow_vertex_dist.specs import _api
from airflow_vertex_dist.specs._base import SpecModel, fail
from airflow_vertex_dist.specs._checks import check_id
from airflow_vertex_dist.specs._parameter_from_api import parameter_from_api
from airflow_vertex_dist.specs.parameters import (
    DoubleParameter,
    Parameter,
    walk_parameters,
)
from airflow_vertex_dist.specs.stopping import (
    ConvexAutomatedStopping,
    DecayCurveAutomatedStopping,
    MedianAutomatedStopping,
    StudyStoppingConfig,
)

__all__ = ["Metric", "SafetyMetricConfig", "Study"]


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
        return check_id("metric_id", value)

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metricId": self.metric_id, "goal": self.goal}
        if self.safety_config is not None:
            out["safetyConfig"] = self.safety_config.to_api()
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
            fail("study.metrics: at least one metric is required; add Metric(metric_id=..., goal=...)")
        ids = [m.metric_id for m in self.metrics]
        if len(set(ids)) != len(ids):
            fail(f"study.metrics: metric ids must be unique (got {ids}); remove the repeats")
        if all(m.safety_config is not None for m in self.metrics):
            # MetricSpec.safety_config: "You must provide a separate metric for objective metric."
            fail(
                "study.metrics: every metric is a safety metric; add the objective as a separate metric "
                "without safety_config"
            )
        if not self.parameters:
            fail("study.parameters: at least one parameter is required; add the parameters to search")
        top = [p.parameter_id for p in self.parameters]
        if len(set(top)) != len(top):
            fail(f"study.parameters: parameter ids must be unique (got {top}); rename the repeats")
        for depth, param in walk_parameters(self.parameters):
            if depth and param.parameter_id in top:
                fail(
                    f"study.parameters: conditional parameter {param.parameter_id!r} repeats a "
                    "top-level parameter id; rename it"
                )
            if self.algorithm == "GRID_SEARCH" and isinstance(param, DoubleParameter):
                fail(
                    f"study.algorithm: GRID_SEARCH takes only integer, categorical and discrete "
                    f"parameters (got double parameter {param.parameter_id!r}); use RANDOM_SEARCH or the "
                    "default algorithm, or make it a discrete parameter"
                )
        stops = [
            n
            for n in ("median_automated_stopping", "decay_curve_stopping", "convex_automated_stopping")
            if getattr(self, n) is not None
        ]
        if len(stops) > 1:
            fail(f"study: at most one automated stopping rule (got {', '.join(stops)}); keep one")
        return self

    def parameter_ids(self) -> list[str]:
        """Every parameter id, conditional ones included, in definition order, without repeats."""
        return list(dict.fromkeys(p.parameter_id for _, p in walk_parameters(self.parameters)))

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
        """``StudySpec`` JSON -> a ``Study`` dict (validated by the caller)."""
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
            parameter_from_api(title, (*loc, "parameters", i), p) for i, p in enumerate(params)
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
