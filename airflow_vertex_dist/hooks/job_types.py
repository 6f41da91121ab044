"""The shapes of the v1 JSON job dicts the package passes on, as ``TypedDict``s (checked by mypy).

The hooks return jobs as the REST API's JSON (camelCase keys, enum names as strings, int64 values as
strings, absent fields omitted: every key is optional). ``CompactJob`` is the job without its
specs (``compact_job``): what a trigger event carries and
what a resumed task reads. Pure: no Google or Airflow imports.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "CompactJob",
    "CompactStudySpec",
    "JobError",
    "Measurement",
    "MetricValue",
    "StudyMetric",
    "Trial",
    "TrialParameter",
]


class JobError(TypedDict, total=False):
    """``error`` (a ``google.rpc.Status``): set on a FAILED or CANCELLED job."""

    code: int
    message: str
    details: list[dict[str, Any]]


class TrialParameter(TypedDict, total=False):
    """One of a trial's ``parameters``."""

    parameterId: str
    value: Any


class MetricValue(TypedDict, total=False):
    """One metric of a measurement."""

    metricId: str
    value: float


class Measurement(TypedDict, total=False):
    """A trial's ``finalMeasurement`` (``stepCount`` is an int64: a string in JSON)."""

    stepCount: str
    metrics: list[MetricValue]


class Trial(TypedDict, total=False):
    """One of a tuning job's ``trials`` (in a compact job, without its intermediate measurements)."""

    id: str
    state: str
    parameters: list[TrialParameter]
    finalMeasurement: Measurement
    infeasibleReason: str
    customJob: str
    startTime: str
    endTime: str
    webAccessUris: dict[str, str]


class StudyMetric(TypedDict, total=False):
    """One of ``studySpec.metrics``: ``goal`` is ``MAXIMIZE`` or ``MINIMIZE``."""

    metricId: str
    goal: str


class CompactStudySpec(TypedDict, total=False):
    """What a compact job keeps of ``studySpec``: its metrics (for the optimisation direction)."""

    metrics: list[StudyMetric]


class CompactJob(TypedDict, total=False):
    """A job without its specs (``compact_job``); ``id`` is the
    last segment of ``name``. The tuning keys (trial counts, ``studySpec``, ``trials``) only on a
    tuning job."""

    name: str
    id: str
    displayName: str
    state: str
    createTime: str
    startTime: str
    endTime: str
    updateTime: str
    error: JobError
    labels: dict[str, str]
    webAccessUris: dict[str, str]
    maxTrialCount: int
    parallelTrialCount: int
    maxFailedTrialCount: int
    studySpec: CompactStudySpec
    trials: list[Trial]
