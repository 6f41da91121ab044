"""The Cloud Logging read API's transports: ``LoggingServiceV2.ListLogEntries`` over gRPC (a generic
handler the JobService's gRPC server also serves) and ``POST /v2/entries:list`` over REST (routed by
rest/handler.py), both answering from one ``LogEntriesApi`` (api.py) through the v2 protos, so the
JSON is exactly what the service's schema allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertex_emulator.cloud_logging.api import LogEntriesApi
from vertex_emulator.core.errors import ApiError

__all__ = ["GRPC_SERVICE", "REST_PATH", "grpc_handler", "rest_list"]

GRPC_SERVICE = "google.logging.v2.LoggingServiceV2"
REST_PATH = "/v2/entries:list"


def rest_list(api: LogEntriesApi, body: Mapping[str, Any]) -> dict[str, Any]:
    """``POST /v2/entries:list`` with a JSON ``body``; returns the JSON response."""
    from google.cloud.logging_v2.types import ListLogEntriesRequest
    from google.protobuf import json_format

    pb = ListLogEntriesRequest.pb()()
    try:
        json_format.ParseDict(dict(body), pb)
    except json_format.ParseError as exc:
        raise ApiError("INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}") from None
    response = api.list_entries(list(pb.resource_names), pb.filter, pb.order_by, pb.page_size, pb.page_token)
    # through the proto, so the JSON is exactly what the service's schema allows
    from google.cloud.logging_v2.types import ListLogEntriesResponse

    out = ListLogEntriesResponse.pb()()
    json_format.ParseDict(response, out)
    result: dict[str, Any] = json_format.MessageToDict(out)
    return result


def grpc_handler(api: LogEntriesApi) -> Any:
    """A ``grpc.GenericRpcHandler`` serving ``LoggingServiceV2.ListLogEntries`` from ``api``."""
    import grpc

    class _Handler(grpc.GenericRpcHandler):  # type: ignore[misc]
        def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
            method: str = handler_call_details.method
            if method == f"/{GRPC_SERVICE}/ListLogEntries":
                return _list_handler(api)
            if method.startswith(f"/{GRPC_SERVICE}/"):
                return _unimplemented(method.rsplit("/", 1)[-1])
            return None

    return _Handler()


def _unimplemented(method: str) -> Any:
    import grpc

    def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(
            grpc.StatusCode.UNIMPLEMENTED,
            f"LoggingServiceV2.{method} is not implemented by the emulator (it serves ListLogEntries)",
        )
        raise AssertionError("unreachable")  # pragma: no cover - abort raises

    return grpc.unary_unary_rpc_method_handler(handle)


def _list_handler(api: LogEntriesApi) -> Any:
    import grpc
    from google.cloud.logging_v2.types import ListLogEntriesRequest, ListLogEntriesResponse
    from google.protobuf import json_format

    def handle(request: Any, context: grpc.ServicerContext) -> bytes:
        try:
            response = api.list_entries(
                list(request.resource_names),
                request.filter,
                request.order_by,
                request.page_size,
                request.page_token,
            )
            out = ListLogEntriesResponse.pb()()
            json_format.ParseDict(response, out)
        except ApiError as exc:
            context.abort(exc.grpc_status_code, exc.message)
        return bytes(out.SerializeToString())

    return grpc.unary_unary_rpc_method_handler(
        handle,
        request_deserializer=ListLogEntriesRequest.pb().FromString,
        response_serializer=lambda data: data,
    )
