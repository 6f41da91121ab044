"""The JobService's vocabulary, shared by its logic (service.py) and its ports (grpc_server.py,
the rest package): the RPCs served (``METHODS``: CustomJob and HyperparameterTuningJob Create/Get/List/
Cancel/Delete, with their aiplatform_v1 request and response types), the job kinds (``KINDS``: resource
name, request and response fields, output-only fields), ``ApiError`` (core/errors.py: api_core's
exception classes, which know each google.rpc.Code's HTTP status), and a stored v1 JSON job to and from
its proto-plus message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from vertex_emulator.core.errors import ApiError
from vertex_emulator.core.jobkinds import JobKind

__all__ = [
    "CUSTOM_JOB_OUTPUT_ONLY",
    "KINDS",
    "METHODS",
    "TUNING_JOB_OUTPUT_ONLY",
    "ApiError",
    "KindInfo",
    "MethodInfo",
    "ResourceCheck",
    "job_from_proto",
    "job_to_proto",
]


#: The fields a Create request may not set, marked ``(google.api.field_behavior) = OUTPUT_ONLY`` in
#: google/cloud/aiplatform/v1/custom_job.proto and hyperparameter_tuning_job.proto (the generated
#: proto-plus descriptors drop field options, so the list is read off the protos by hand).
_OUTPUT_ONLY = frozenset(
    {
        "name",
        "state",
        "createTime",
        "startTime",
        "endTime",
        "updateTime",
        "error",
        "satisfiesPzs",
        "satisfiesPzi",
    }
)
CUSTOM_JOB_OUTPUT_ONLY = _OUTPUT_ONLY | {"webAccessUris"}
TUNING_JOB_OUTPUT_ONLY = _OUTPUT_ONLY | {"trials"}


class ResourceCheck(Protocol):
    """Whether a CustomJob fits the persistent resource it names: an ``ApiError`` when not (the app passes
    persistent_resources/service.py's ``PersistentResourceService``)."""

    def check_job(self, parent: str, body: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class KindInfo:
    kind: JobKind
    resource: str  # "CustomJob"
    body_field: str  # field of the Create request holding the job
    list_field: str  # field of the List response holding the jobs
    output_only: frozenset[str]

    def message_type(self) -> Any:
        from google.cloud import aiplatform_v1

        return getattr(aiplatform_v1, self.resource)


KINDS: dict[JobKind, KindInfo] = {
    "customJobs": KindInfo(
        "customJobs",
        "CustomJob",
        "custom_job",
        "custom_jobs",
        CUSTOM_JOB_OUTPUT_ONLY,
    ),
    "hyperparameterTuningJobs": KindInfo(
        "hyperparameterTuningJobs",
        "HyperparameterTuningJob",
        "hyperparameter_tuning_job",
        "hyperparameter_tuning_jobs",
        TUNING_JOB_OUTPUT_ONLY,
    ),
}


@dataclass(frozen=True)
class MethodInfo:
    """One JobService RPC the emulator serves: its request and response types by name."""

    name: str  # "CreateCustomJob"
    verb: str  # "create" | "get" | "list" | "cancel" | "delete"
    kind: JobKind
    request: str  # aiplatform_v1 type name
    response: str  # aiplatform_v1 type name, or "Empty" / "Operation"

    def request_type(self) -> Any:
        from google.cloud import aiplatform_v1

        return getattr(aiplatform_v1, self.request)


def _methods() -> dict[str, MethodInfo]:
    out: dict[str, MethodInfo] = {}
    for kind, info in KINDS.items():
        res = info.resource
        plural = res + "s"
        for verb, name, response in (
            ("create", f"Create{res}", res),
            ("get", f"Get{res}", res),
            ("list", f"List{plural}", f"List{plural}Response"),
            ("cancel", f"Cancel{res}", "Empty"),
            ("delete", f"Delete{res}", "Operation"),
        ):
            out[name] = MethodInfo(name, verb, kind, f"{name}Request", response)
    return out


#: The RPCs served, by JobService method name.
METHODS: dict[str, MethodInfo] = _methods()


def job_to_proto(kind: JobKind, body: Mapping[str, Any]) -> Any:
    """A stored v1 JSON job as its proto-plus message."""
    from google.protobuf import json_format

    msg_type = KINDS[kind].message_type()
    pb = msg_type.pb()()
    json_format.ParseDict(dict(body), pb, ignore_unknown_fields=True)
    return msg_type.wrap(pb)


def job_from_proto(kind: JobKind, message: Any) -> dict[str, Any]:
    """A proto-plus job message as v1 JSON (camelCase, enum names, unset fields left out)."""
    from google.protobuf import json_format

    msg_type = KINDS[kind].message_type()
    out: dict[str, Any] = json_format.MessageToDict(msg_type.pb(message))
    return out
