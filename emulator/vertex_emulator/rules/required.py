"""Rule ``required``: every field the v1 reference marks ``Required.`` is set.

Source: the v1 protos' comments (``google/cloud/aiplatform_v1/types/``), read from the generated
classes' docstrings by ``vertex_emulator.rules.fields.field_doc``, so a field Google marks Required in a new
release is checked without anyone listing it. The service's answer for such a field is ``Required
field is not set.`` (googleapis/go-genai issue 508: ``1.Field: batch_prediction_job.display_name;
Message: Required field is not set.``), naming the field from the request's own field
(``custom_job.display_name``).

On the wire a field is "not set" when it holds its proto3 zero: an empty string, enum 0, an empty list
or map, an absent message. A required *number* is different: proto3 cannot tell 0 from unset, and 0 is
a value (an integer range [0, 3]), so numbers are never refused here. A required field inside an
optional message is required only when that message is present; an empty worker pool (``{}``, the
documented way to skip a pool) and output-only fields (ignored on Create) are not walked.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from vertex_emulator.rules._common import problem
from vertex_emulator.rules.fields import ProtoField, field_doc

__all__ = ["required_problems"]

_NUMBERS = frozenset({1, 2, 3, 4, 5, 6, 7, 13, 15, 16, 17, 18})  # FieldDescriptor.TYPE_* of numbers
_MESSAGE = 11
_WORKER_POOL = "google.cloud.aiplatform.v1.WorkerPoolSpec"


@cache
def _doc(message_name: str, field_name: str) -> str:
    return field_doc(ProtoField(path="", name=field_name, kind="", repeated=False, message=message_name))


def _is_map(fd: Any) -> bool:
    return fd.message_type is not None and bool(fd.message_type.GetOptions().map_entry)


def required_problems(message: Any, path: str) -> list[str]:
    """The Required fields left unset in the raw message ``message`` and the messages it holds."""
    out: list[str] = []
    _walk(message, path, out)
    return out


def _walk(message: Any, path: str, out: list[str]) -> None:
    desc = message.DESCRIPTOR
    for fd in desc.fields:
        doc = _doc(desc.full_name, fd.name)
        if doc.startswith("Output only."):
            continue  # ignored on Create, as the service does
        where = f"{path}.{fd.name}"
        value = getattr(message, fd.name)
        repeated = hasattr(value, "__len__") and not isinstance(value, str | bytes)
        if doc.startswith("Required."):
            if repeated:
                unset = len(value) == 0
            elif fd.type == _MESSAGE:
                unset = not message.HasField(fd.name)
            elif fd.type in _NUMBERS or fd.type == 8:  # numbers (and bools) hold a value at 0
                unset = False
            else:
                unset = value in ("", b"", 0)
            if unset:
                out.append(problem(where, "Required field is not set."))
        if fd.type != _MESSAGE or _is_map(fd):
            continue
        if repeated:
            for index, item in enumerate(value):
                if fd.message_type.full_name == _WORKER_POOL and item.ByteSize() == 0:
                    continue  # a skipped pool: "can be skipped by providing an empty value"
                _walk(item, f"{where}[{index}]", out)
        elif message.HasField(fd.name):
            _walk(value, where, out)
