"""Every field of the v1 ``CustomJob`` and ``HyperparameterTuningJob`` messages, read from the
generated proto descriptors, with what the proto reference says about each.

The conformance test walks these (so a field added to the protos is tested without anyone listing
it), and ``docs/emulator.md``'s field table is generated from them with the emulator's notes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["ROOTS", "ProtoField", "field_doc", "is_repeated", "walk"]

#: The resources whose fields are walked.
ROOTS = ("CustomJob", "HyperparameterTuningJob")

#: Well-known message types that JSON writes as one value: treated as leaves.
_WELL_KNOWN_LEAVES = {
    "google.protobuf.Duration": "duration",
    "google.protobuf.Timestamp": "timestamp",
    "google.protobuf.BoolValue": "bool",
    "google.protobuf.Int32Value": "int32",
    "google.protobuf.Int64Value": "int64",
    "google.protobuf.DoubleValue": "double",
    "google.protobuf.StringValue": "string",
    "google.protobuf.Value": "value",
    "google.protobuf.Any": "any",
}

_SCALAR_KINDS = {
    1: "double",
    2: "float",
    3: "int64",
    4: "uint64",
    5: "int32",
    8: "bool",
    9: "string",
    13: "uint32",
    14: "enum",
    17: "sint32",
    18: "sint64",
}


@dataclass(frozen=True)
class ProtoField:
    """One field, named by its JSON path from the resource (``CustomJob.jobSpec.scheduling.timeout``)."""

    path: str
    name: str  # proto (snake_case) name
    kind: str  # a scalar kind, "enum", "map", "message", or a well-known leaf ("duration", ...)
    repeated: bool
    message: str  # full name of the message that declares the field
    enum_values: tuple[str, ...] = ()
    has_presence: bool = False
    #: JSON names of the other members of the (real, not proto3-optional) oneof holding the field
    oneof_siblings: tuple[str, ...] = ()

    @property
    def is_leaf(self) -> bool:
        """A scalar, bool, enum, map or well-known value: what a test can set to a zero and a non-zero."""
        return self.kind != "message"

    @property
    def parts(self) -> list[str]:
        return self.path.split(".")[1:]


def _pb(name: str) -> Any:
    from google.cloud import aiplatform_v1

    return getattr(aiplatform_v1, name).pb().DESCRIPTOR


def walk(root: str, *, max_repeat: int = 2) -> Iterator[ProtoField]:
    """Every field reachable from ``root`` (``"CustomJob"``...), depth first, in declaration order.

    A message type may appear ``max_repeat`` times on one path, so a recursive message (a
    conditional parameter's ``parameterSpec``) is walked once inside itself, then stops.
    """
    yield from _walk(_pb(root), root, (), max_repeat)


def _siblings(fd: Any) -> tuple[str, ...]:
    oneof = fd.containing_oneof
    if oneof is None or oneof.name.startswith("_"):  # "_name": the synthetic oneof of `optional`
        return ()
    return tuple(other.json_name for other in oneof.fields if other.name != fd.name)


def is_repeated(fd: Any) -> bool:
    """Whether the field descriptor ``fd`` is a repeated (or map) field.

    A version branch kept here, not in ``_compat.py`` (which loads Airflow, and the emulator need
    not): ``FieldDescriptor.is_repeated`` is new in protobuf 5.x/6.x (4.25, which the lowest
    supported google-cloud-aiplatform resolves to, lacks it), and the newest versions deprecate
    ``label``; use whichever the installed protobuf has.
    """
    flag = getattr(fd, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(fd.label == fd.LABEL_REPEATED)


def _walk(desc: Any, path: str, stack: tuple[str, ...], max_repeat: int) -> Iterator[ProtoField]:
    for fd in desc.fields:
        child_path = f"{path}.{fd.json_name}"
        repeated = is_repeated(fd)
        common: dict[str, Any] = {
            "path": child_path,
            "name": fd.name,
            "repeated": repeated,
            "message": desc.full_name,
            "oneof_siblings": _siblings(fd),
        }
        if fd.message_type is not None:
            full = fd.message_type.full_name
            if fd.message_type.GetOptions().map_entry:
                yield ProtoField(kind="map", **{**common, "repeated": False})
                continue
            if full in _WELL_KNOWN_LEAVES:
                yield ProtoField(kind=_WELL_KNOWN_LEAVES[full], has_presence=True, **common)
                continue
            yield ProtoField(kind="message", has_presence=True, **common)
            if stack.count(full) >= max_repeat:
                continue
            yield from _walk(fd.message_type, child_path, (*stack, full), max_repeat)
            continue
        values: tuple[str, ...] = ()
        if fd.enum_type is not None:
            values = tuple(v.name for v in fd.enum_type.values)
        yield ProtoField(
            kind=_SCALAR_KINDS[fd.type], enum_values=values, has_presence=bool(fd.has_presence), **common
        )


_DOC_CACHE: dict[str, dict[str, str]] = {}


def field_doc(field: ProtoField) -> str:
    """The proto reference text of ``field`` (from the generated class's docstring), one line."""
    docs = _DOC_CACHE.get(field.message)
    if docs is None:
        docs = _DOC_CACHE[field.message] = _class_docs(field.message)
    return docs.get(field.name, "")


def _class_docs(full_name: str) -> dict[str, str]:
    from google.cloud import aiplatform_v1

    parts = full_name.split(".")[4:]  # google.cloud.aiplatform.v1.<Outer>[.<Inner>...]
    obj: Any = aiplatform_v1
    for part in parts:
        obj = getattr(obj, part, None)
        if obj is None:
            return {}
    doc = obj.__doc__ or ""
    out: dict[str, str] = {}
    # "<indent>name (type):" then its text, indented deeper, under "Attributes:"
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        match = re.match(r"^( *)(\w+) \([^)]*\):$", line)
        if match is None:
            continue
        indent = len(match.group(1))
        text = []
        for follow in lines[i + 1 :]:
            if follow.strip() and len(follow) - len(follow.lstrip()) <= indent:
                break
            text.append(follow.strip())
        out.setdefault(match.group(2), " ".join(t for t in text if t))
    return out
