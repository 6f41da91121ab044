"""What every rule module shares: reading a request through the v1 protos, and naming a problem.

Rules read the raw protobuf messages (``type(message).pb(message)`` of the proto-plus request), so
proto3 defaults apply exactly as the service sees them: an unset number is 0, an unset string is
``""``, an unset enum is its ``*_UNSPECIFIED`` value (0), and only message fields have presence.

A problem is one string, ``"<field path>: <rule>"``, the path in the request's own snake_case names
with list indexes (``job_spec.worker_pool_specs[2].machine_spec.accelerator_count``), the way the
service names a field in its ``List of found errors`` answers (see ``format_problems``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "duration_s",
    "enum_name",
    "format_problems",
    "has",
    "problem",
    "raw",
    "to_dict",
]


def raw(message: Any) -> Any:
    """The raw protobuf message behind a proto-plus message (or ``message`` itself if it is raw)."""
    if hasattr(message, "DESCRIPTOR"):
        return message
    return type(message).pb(message)


def _known(message: Any, field: str) -> bool:
    """Whether the installed v1 types have ``field``: an older google-cloud-aiplatform lacks the newest
    fields (``reservation_affinity``, ``strategy``...), and a request parsed into its types cannot carry
    them, so a rule reads them as unset."""
    return field in message.DESCRIPTOR.fields_by_name


def has(message: Any, field: str) -> bool:
    """Whether the message field ``field`` of a raw message is set (present on the wire)."""
    return _known(message, field) and bool(message.HasField(field))


def enum_name(message: Any, field: str) -> str:
    """The name of an enum field's value; an unknown number (the wire allows it) as ``"<number>"``;
    ``""`` for a field the installed types do not have."""
    if not _known(message, field):
        return ""
    number = getattr(message, field)
    value = message.DESCRIPTOR.fields_by_name[field].enum_type.values_by_number.get(number)
    return value.name if value is not None else str(number)


def duration_s(message: Any, field: str) -> float | None:
    """A ``google.protobuf.Duration`` field in seconds, or ``None`` when it is not set."""
    if not has(message, field):
        return None
    value = getattr(message, field)
    return float(value.seconds) + float(value.nanos) / 1e9


def to_dict(message: Any) -> dict[str, Any]:
    """A raw message as v1 JSON (camelCase names, enum names, unset fields left out)."""
    from google.protobuf import json_format

    out: dict[str, Any] = json_format.MessageToDict(message)
    return out


def problem(path: str, rule: str) -> str:
    return f"{path}: {rule}"


def format_problems(problems: Iterable[str]) -> str:
    """The text of an INVALID_ARGUMENT answer, in the service's own layout.

    The service lists every refused field as ``List of found errors:\\t1.Field: <path>; Message:
    <text>\\t2.Field: ...`` (quoted in user reports: PrefectHQ/prefect issue 5940, a CustomJob env
    value, ``1.Field: job_spec.worker_pool_specs[0].container_spec.env[6].value; Message: ...``, and
    googleapis/go-genai issue 508, ``1.Field: batch_prediction_job.display_name; Message: Required
    field is not set.``).
    """
    parts = []
    for index, text in enumerate(problems, start=1):
        path, sep, rule = text.partition(": ")
        parts.append(f"{index}.Field: {path}; Message: {rule}\t" if sep else f"{index}.{text}\t")
    return "List of found errors:\t" + "".join(parts)
