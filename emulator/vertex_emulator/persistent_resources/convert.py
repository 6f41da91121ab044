"""A stored v1 JSON PersistentResource to and from its proto-plus message, and the fields a Create may not
set (``(google.api.field_behavior) = OUTPUT_ONLY`` in google/cloud/aiplatform/v1/persistent_resource.proto;
the generated descriptors drop field options, so the list is read off the proto by hand)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["OUTPUT_ONLY", "from_proto", "to_proto"]

OUTPUT_ONLY = frozenset(
    {"name", "state", "error", "createTime", "startTime", "updateTime", "resourceRuntime"}
)


def to_proto(body: Mapping[str, Any]) -> Any:
    """A stored v1 JSON resource as its ``aiplatform_v1.PersistentResource``."""
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    pb = aiplatform_v1.PersistentResource.pb()()
    json_format.ParseDict(dict(body), pb, ignore_unknown_fields=True)
    return aiplatform_v1.PersistentResource.wrap(pb)


def from_proto(message: Any) -> dict[str, Any]:
    """A proto-plus resource as v1 JSON (camelCase, enum names, unset fields left out)."""
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    out: dict[str, Any] = json_format.MessageToDict(aiplatform_v1.PersistentResource.pb(message))
    return out
