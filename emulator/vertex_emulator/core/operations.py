"""``google.longrunning.Operation`` messages as the Vertex AI services return them: a name under the
resource (``<resource>/operations/<id>``), the method's metadata (``GenericOperationMetadata`` inside)
packed in ``metadata``, and once done the ``response`` (or the ``error``, a ``google.rpc.Status``)."""

from __future__ import annotations

import secrets
from typing import Any

__all__ = ["new_operation_name", "operation"]


def new_operation_name(under: str) -> str:
    """A fresh operation name under ``under`` (a location or a resource name), numeric like the service's."""
    return f"{under}/operations/{secrets.randbelow(9 * 10**18) + 10**18}"


def operation(
    name: str,
    metadata: Any,
    *,
    done: bool,
    response: Any = None,
    error: tuple[int, str] | None = None,
) -> Any:
    """An Operation named ``name``: ``metadata`` and ``response`` are protobuf messages (raw, not
    proto-plus), packed as ``Any``; ``error`` is ``(google.rpc code, message)``."""
    from google.longrunning import operations_pb2

    op = operations_pb2.Operation(name=name, done=done)
    op.metadata.Pack(metadata)
    if error is not None:
        op.error.code, op.error.message = error
    elif response is not None:
        op.response.Pack(response)
    return op
