"""Early stopping: the automated stopping rules of trials (median, decay curve, convex) and the
study's own stopping config (v1 ``StudySpec``'s stopping specs and ``StudyStoppingConfig``)."""

# No ``from __future__ import annotations`` in the modules that define spec models, unlike the rest of
# the package: with it, pydantic compiles and evaluates every field's annotation string when the model
# classes are created, on every DAG parse -- about a fifth of this package's parse cost (some 20 M of
# 115 M instructions for the benchmark's DAG file). Forward references are quoted instead.

from typing import Any

from pydantic import Field, field_validator, model_validator
from typing_extensions import Self  # typing.Self is Python 3.11+; the package supports 3.10

from airflow_vertex_dist.common.durations import duration_to_api
from airflow_vertex_dist.specs._base import Duration, SpecModel, fail
from airflow_vertex_dist.specs._checks import INT64_MAX, check_id

__all__ = [
    "ConvexAutomatedStopping",
    "DecayCurveAutomatedStopping",
    "MedianAutomatedStopping",
    "StudyStoppingConfig",
    "StudyTimeConstraint",
]


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

    max_step_count: int | None = Field(default=None, ge=1, le=INT64_MAX)
    min_step_count: int | None = Field(default=None, ge=0, le=INT64_MAX)
    min_measurement_count: int | None = Field(default=None, ge=1, le=INT64_MAX)
    learning_rate_parameter_name: str | None = None
    use_elapsed_duration: bool = False
    update_all_stopped_trials: bool | None = None

    @field_validator("learning_rate_parameter_name")
    @classmethod
    def _lr_name(cls, value: str | None) -> str | None:
        return None if value is None else check_id("learning_rate_parameter_name", value)

    @model_validator(mode="after")
    def _check(self) -> Self:
        lo, hi = self.min_step_count, self.max_step_count
        if lo is not None and hi is not None and lo > hi:
            fail(
                f"min_step_count: must not exceed max_step_count (got {lo} > {hi}); lower it or raise "
                "max_step_count"
            )
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
        if out.get("minStepCount") == 0:
            # a plain int64 in the proto (no presence): 0 is the unset value, so it is not sent (the
            # service, and a round trip through the proto, reads a missing field and 0 alike)
            del out["minStepCount"]
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
