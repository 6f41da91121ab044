"""The shapes of the v1 JSON job dicts the package passes on, as ``TypedDict``s (checked by mypy).

The hooks return jobs as the REST API's JSON (camelCase keys, enum names as strings, int64 values as
strings, absent fields omitted: every key is optional). ``CompactJob`` is the job without its
specs (``compact_job``): what a trigger event carries and
what a resumed task reads. Pure: no Google or Airflow imports.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "JobList",
    "CompactJob",
    "Job",
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


class _JobKeys(TypedDict, total=False):
    name: str
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
    trials: list[Trial]


class CompactJob(_JobKeys, total=False):
    """A job without its specs (``compact_job``): name,
    display name, state, times, error, labels, web access URIs, and ``id``, the last segment of
    ``name``; on a tuning job also the trial counts, ``studySpec.metrics`` and the trials."""

    id: str
    studySpec: CompactStudySpec


class Job(_JobKeys, total=False):
    """A CustomJob or HyperparameterTuningJob as the hooks return it: the REST API's JSON. The keys the
    package reads are typed; the specs stay JSON objects (``jobSpec`` of a custom job, ``trialJobSpec``
    and ``studySpec`` of a tuning job: the v1 request shapes the spec models render)."""

    jobSpec: dict[str, Any]
    trialJobSpec: dict[str, Any]
    studySpec: dict[str, Any]


class JobList(list[Job]):
    """The jobs of a List call, every page of it, and how many pages (List calls) that took: a service
    may return fewer jobs a page than asked for (AIP-158), so the count is what was really called."""

    pages: int = 0
