"""The PersistentResourceService's transports: a generic gRPC handler for
``google.cloud.aiplatform.v1.PersistentResourceService`` and ``google.longrunning.Operations.GetOperation``
(served beside the JobService by its gRPC server, behind the same caller checks), and the v1 REST mapping
as the stock client's REST transport (``persistent_resource_service/transports/rest_base.py``) sends it::

    POST   /v1/{parent=projects/*/locations/*}/persistentResources?persistentResourceId=ID
                                                               body: PersistentResource
    GET    /v1/{name=projects/*/locations/*/persistentResources/*}
    GET    /v1/{parent=projects/*/locations/*}/persistentResources?pageSize=&pageToken=
    DELETE /v1/{name=projects/*/locations/*/persistentResources/*}
    POST   /v1/{name=projects/*/locations/*/persistentResources/*}:reboot                   body: {}
    GET    /v1/{name=projects/*/locations/*/persistentResources/*/operations/*}             (and /ui/...)

The operations' GET is also served under ``/ui/``: the client's operations client tries the ``/ui/``
binding of GetOperation first (its http rules list it before ``/v1/``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from vertex_emulator.core.errors import ApiError
from vertex_emulator.persistent_resources.service import METHODS, SERVED, PersistentResourceService

__all__ = ["GRPC_SERVICE", "OPERATION_PATH", "grpc_handler", "rest_call", "serves"]

GRPC_SERVICE = "google.cloud.aiplatform.v1.PersistentResourceService"
_OPERATIONS = "google.longrunning.Operations"
_COLLECTION_RE = re.compile(r"/v1/(?P<parent>projects/[^/]+/locations/[^/]+)/persistentResources")
_ITEM_RE = re.compile(
    r"/v1/(?P<name>projects/[^/]+/locations/[^/]+/persistentResources/[^/:]+)(?P<verb>:reboot)?"
)
#: an operation of a persistent resource, under /v1/ or /ui/
OPERATION_PATH = re.compile(
    r"/(?:v1|ui)/(?P<name>projects/[^/]+/locations/[^/]+/persistentResources/[^/]+/operations/[^/:]+)"
)
_IGNORED = {"$alt", "alt", "$prettyPrint", "prettyPrint", "$fields", "fields", "key"}


def serves(path: str) -> bool:
    """Whether ``path`` is this service's (its collection, a resource, or one of their operations)."""
    return bool(OPERATION_PATH.fullmatch(path) or _COLLECTION_RE.fullmatch(path) or _ITEM_RE.fullmatch(path))


def _request(
    method: str, path: str, query: dict[str, list[str]], json_body: Callable[[], dict[str, Any]]
) -> tuple[str, dict[str, Any]]:
    collection, item = _COLLECTION_RE.fullmatch(path), _ITEM_RE.fullmatch(path)
    params = {key: values[-1] for key, values in query.items() if key not in _IGNORED}
    if collection and method == "POST":
        return "CreatePersistentResource", {
            **params,
            "parent": collection["parent"],
            "persistentResource": json_body(),
        }
    if collection and method == "GET":
        return "ListPersistentResources", {**params, "parent": collection["parent"]}
    if item and method == "GET" and not item["verb"]:
        return "GetPersistentResource", {"name": item["name"]}
    if item and method == "DELETE" and not item["verb"]:
        return "DeletePersistentResource", {"name": item["name"]}
    if item and method == "POST" and item["verb"]:
        json_body()  # body "*": nothing beyond the name
        return "RebootPersistentResource", {"name": item["name"]}
    if item and method == "PATCH":
        raise ApiError("UNIMPLEMENTED", f"{method} {path}: not implemented by the emulator ({SERVED})")
    raise ApiError(
        "NOT_FOUND", f"{method} {path}: no such PersistentResourceService method on the Vertex AI emulator"
    )


def rest_call(
    service: PersistentResourceService,
    method: str,
    path: str,
    query: dict[str, list[str]],
    json_body: Callable[[], dict[str, Any]],
) -> bytes:
    """Answer ``method path`` (``serves(path)``) as JSON; ``ApiError`` else."""
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    ints = "enum-encoding=int" in ";".join(query.get("$alt", []) + query.get("alt", []))
    operation = OPERATION_PATH.fullmatch(path)
    if operation is not None:
        if method not in ("GET", "HEAD"):
            raise ApiError("UNIMPLEMENTED", f"{method} {path}: the emulator serves GetOperation only")
        response: Any = service.get_operation(operation["name"])
    else:
        name, fields = _request(method, path, query, json_body)
        request_type = getattr(aiplatform_v1, METHODS[name][1])
        pb = request_type.pb()()
        try:
            json_format.ParseDict(fields, pb)
        except json_format.ParseError as exc:
            raise ApiError("INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}") from None
        response = service.call(name, request_type.wrap(pb))
        if not hasattr(response, "SerializeToString"):  # proto-plus: its raw message
            response = type(response).pb(response)
    text: str = json_format.MessageToJson(response, use_integers_for_enums=ints)
    return text.encode() + b"\n"


def grpc_handler(service: PersistentResourceService) -> Any:
    """A ``grpc.GenericRpcHandler`` for the service's RPCs and GetOperation of its operations."""
    import grpc

    handlers = {f"/{GRPC_SERVICE}/{name}": _unary(service, name) for name in METHODS}
    handlers[f"/{_OPERATIONS}/GetOperation"] = _get_operation(service)

    class _Handler(grpc.GenericRpcHandler):  # type: ignore[misc]
        def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
            method: str = details.method
            handler = handlers.get(method)
            if handler is None and method.startswith((f"/{GRPC_SERVICE}/", f"/{_OPERATIONS}/")):
                return _unimplemented(method)
            return handler

    return _Handler()


def _abort(context: Any, exc: ApiError) -> None:
    context.abort(exc.grpc_status_code, exc.message)


def _unary(service: PersistentResourceService, name: str) -> Any:
    import grpc
    from google.cloud import aiplatform_v1

    request_type = getattr(aiplatform_v1, METHODS[name][1])

    def handle(raw: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            request = request_type.deserialize(raw)
        except Exception as exc:  # DecodeError: the caller's bytes
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"{METHODS[name][1]}: the request does not parse: {exc}"
            )
        try:
            response = service.call(name, request)
        except ApiError as exc:
            _abort(context, exc)
        if hasattr(response, "SerializeToString"):
            return bytes(response.SerializeToString())
        return bytes(type(response).serialize(response))

    return grpc.unary_unary_rpc_method_handler(handle)


def _get_operation(service: PersistentResourceService) -> Any:
    import grpc
    from google.longrunning import operations_pb2

    def handle(raw: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            request = operations_pb2.GetOperationRequest.FromString(raw)
            return bytes(service.get_operation(request.name).SerializeToString())
        except ApiError as exc:
            _abort(context, exc)
        except Exception as exc:  # DecodeError
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"GetOperationRequest: the request does not parse: {exc}"
            )
        raise AssertionError("unreachable")  # pragma: no cover - abort raises

    return grpc.unary_unary_rpc_method_handler(handle)


def _unimplemented(method: str) -> Any:
    import grpc

    def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(
            grpc.StatusCode.UNIMPLEMENTED,
            f"{method.lstrip('/')} is not implemented by the emulator "
            f"({SERVED}, and GetOperation of their operations)",
        )
        raise AssertionError("unreachable")  # pragma: no cover - abort raises

    return grpc.unary_unary_rpc_method_handler(handle)
