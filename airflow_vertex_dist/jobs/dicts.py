"""Helpers over the v1 JSON job dicts the hooks return (camelCase keys, enum names as strings).

Pure: no Google or Airflow imports. The job kinds and state sets are in ``jobs.kinds``, the RFC 3339
times in ``airflow_vertex_dist.common``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.common.trial_values import typed_parameters, whole_number_parameters
from airflow_vertex_dist.jobs.kinds import (
    CUSTOM_JOBS,
    TUNING_JOBS,
    JobKind,
)

if TYPE_CHECKING:
    from airflow_vertex_dist.jobs.types import CompactJob

__all__ = [
    "FAILURE_STATES",
    "IF_EXISTS",
    "PARTIAL_SUCCESS",
    "REATTACHABLE_STATES",
    "IfExists",
    "JobName",
    "check_if_exists",
    "check_wait_settings",
    "compact_job",
    "error_suffix",
    "job_labels",
    "job_spec",
    "job_state",
    "parse_job_name",
    "short_state",
]

#: What find-or-create does with this run's live or succeeded job (the hooks' and operators' ``if_exists``).
IfExists = Literal["reattach", "fail", "recreate"]
IF_EXISTS: tuple[IfExists, ...] = get_args(IfExists)


def check_if_exists(value: str) -> IfExists:
    """``if_exists``, checked: what find-or-create does with this run's live or succeeded job."""
    if value not in IF_EXISTS:
        raise ValueError(f"if_exists: must be one of {', '.join(IF_EXISTS)} (got {value!r})")
    return value


#: what a PARTIALLY_SUCCEEDED job means for the task.
PARTIAL_SUCCESS = ("fail", "succeed")


def check_wait_settings(partial_success: str, poll_interval: float, paused_grace: float) -> None:
    """The wait settings the operators and the trigger share; ``ValueError`` naming the bad one.
    (Here rather than with the wait rules in ``jobs.states``: a DAG file that builds an
    operator checks these, and need not load the rest.)"""
    if partial_success not in PARTIAL_SUCCESS:
        raise ValueError(
            f"partial_success: must be one of {', '.join(PARTIAL_SUCCESS)} (got {partial_success!r})"
        )
    if not float(poll_interval) > 0:
        raise ValueError(f"poll_interval: must be a positive number of seconds (got {poll_interval!r})")
    if float(paused_grace) < 0:
        raise ValueError(f"paused_grace: must be >= 0 seconds (got {paused_grace!r})")


FAILURE_STATES = frozenset({"JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"})
#: States a retried task re-attaches to instead of creating a new job.
REATTACHABLE_STATES = frozenset(
    {
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_PAUSED",
        "JOB_STATE_UPDATING",
        "JOB_STATE_SUCCEEDED",
    }
)

_NAME_RE = LazyRegex(
    r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/"
    r"(?P<kind>customJobs|hyperparameterTuningJobs)/(?P<job_id>[^/]+)$"
)


class JobName:
    """A parsed job resource name ``projects/P/locations/L/<kind>/<id>``."""

    __slots__ = ("project", "location", "kind", "job_id")

    def __init__(self, project: str, location: str, kind: JobKind, job_id: str) -> None:
        self.project = project
        self.location = location
        self.kind: JobKind = kind
        self.job_id = job_id

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.location}"

    def __str__(self) -> str:
        return f"{self.parent}/{self.kind}/{self.job_id}"

    def __repr__(self) -> str:
        return f"JobName({str(self)!r})"


def parse_job_name(name: str, *, field: str = "job_name") -> JobName:
    """Parse a job resource name; ``ValueError`` naming ``field`` when it is not one."""
    match = _NAME_RE.match(name or "")
    if match is None:
        raise ValueError(
            f"{field}: {name!r} is not a job name of the form "
            "projects/<project>/locations/<location>/(customJobs|hyperparameterTuningJobs)/<id>"
        )
    kind: JobKind = CUSTOM_JOBS if match["kind"] == CUSTOM_JOBS else TUNING_JOBS
    return JobName(match["project"], match["location"], kind, match["job_id"])


def job_state(job: Mapping[str, Any]) -> str:
    state = job.get("state")
    return state if isinstance(state, str) else "JOB_STATE_UNSPECIFIED"


def job_labels(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """The job's ``labels``, or ``{}`` when it carries none (the JSON form leaves an empty map out)."""
    labels = job.get("labels")
    return labels if isinstance(labels, Mapping) else {}


def job_spec(job: Mapping[str, Any]) -> dict[str, Any]:
    """The ``CustomJobSpec`` of a custom job (``jobSpec``), or the trial job spec of a tuning job
    (``trialJobSpec``); ``{}`` when it carries neither. The dict itself, not a copy."""
    for key in ("jobSpec", "trialJobSpec"):
        spec = job.get(key)
        if isinstance(spec, dict):
            return spec
    return {}


def short_state(state: str) -> str:
    """``JOB_STATE_RUNNING`` -> ``RUNNING``, for messages."""
    return state.removeprefix("JOB_STATE_")


def error_suffix(job: Mapping[str, Any]) -> str:
    """``": <the job's error message>"``, or ``""`` when the job carries none."""
    error = job.get("error")
    if isinstance(error, dict) and error.get("message"):
        return f": {error['message']}"
    return ""


_COMPACT_KEYS = (
    "name",
    "displayName",
    "state",
    "createTime",
    "startTime",
    "endTime",
    "updateTime",
    "error",
    "labels",
    "webAccessUris",
    "maxTrialCount",
    "parallelTrialCount",
    "maxFailedTrialCount",
)
_TRIAL_KEYS = (
    "id",
    "state",
    "parameters",
    "finalMeasurement",
    "infeasibleReason",
    "customJob",
    "startTime",
    "endTime",
    "webAccessUris",
)


def _compact_trial(trial: Mapping[str, Any], whole: frozenset[str]) -> dict[str, Any]:
    out = {k: trial[k] for k in _TRIAL_KEYS if k in trial}
    if "parameters" in out and whole:
        out["parameters"] = typed_parameters(out["parameters"], whole)
    return out


def compact_job(job: Mapping[str, Any]) -> CompactJob:
    """The job without its (large) specs: what a trigger event and XCom carry.

    Keeps name, display name, state, times, error, labels and web access URIs; for a tuning job also
    the trial counts, the study's metrics (``studySpec.metrics``, for the optimisation direction) and
    every trial without its intermediate measurements, an integer parameter's value an ``int``
    (``airflow_vertex_dist.common.trial_values``: the study spec says which, and the compact job
    no longer holds it).
    """
    out: dict[str, Any] = {key: job[key] for key in _COMPACT_KEYS if key in job}  # (see CompactJob)
    if "name" in job:
        out["id"] = str(job["name"]).rsplit("/", 1)[-1]
    study = job.get("studySpec")
    if isinstance(study, dict) and "metrics" in study:
        out["studySpec"] = {"metrics": study["metrics"]}
    trials = job.get("trials")
    if isinstance(trials, list):
        whole = whole_number_parameters(study)
        out["trials"] = [_compact_trial(t, whole) for t in trials if isinstance(t, dict)]
    return cast("CompactJob", out)
