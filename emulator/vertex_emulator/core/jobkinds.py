"""The two job collections the emulator serves and the v1 ``JobState`` names it reports
(google/cloud/aiplatform/v1/job_state.proto)."""

from __future__ import annotations

from typing import Literal

from google.logging.type.log_severity_pb2 import LogSeverity

__all__ = ["JOB_KINDS", "SEVERITIES", "TERMINAL_STATES", "JobKind"]

#: The collection in a job's resource name: ``projects/P/locations/L/<kind>/<id>``.
JobKind = Literal["customJobs", "hyperparameterTuningJobs"]
JOB_KINDS: tuple[JobKind, ...] = ("customJobs", "hyperparameterTuningJobs")

#: The states a job ends in (job_state.proto: SUCCEEDED, FAILED, CANCELLED, EXPIRED and
#: PARTIALLY_SUCCEEDED are final; PAUSED and UPDATING are not).
TERMINAL_STATES = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
    }
)

#: Cloud Logging's severities, name -> number: the proto enum itself
#: (google/logging/type/log_severity.proto, as googleapis-common-protos ships it).
SEVERITIES: dict[str, int] = dict(LogSeverity.items())
