"""The JobService over gRPC: a ``grpc.server`` with one generic handler for
``google.cloud.aiplatform.v1.JobService``.

Requests are deserialized with the generated proto-plus types (``Type.deserialize``), responses
serialized with ``Type.serialize`` (or ``SerializeToString`` for ``Empty`` and ``Operation``), and
errors are sent with ``context.abort(code, message)``. Every other JobService method answers
UNIMPLEMENTED with a message saying what the emulator serves. The stock ``JobServiceClient`` and
``JobServiceAsyncClient`` work unchanged over an insecure channel.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from airflow_vertex_dist.emulator.service import METHODS, ApiError, JobService, MethodInfo

__all__ = ["SERVICE_NAME", "GrpcServer"]

SERVICE_NAME = "google.cloud.aiplatform.v1.JobService"

_log = logging.getLogger(__name__)


def _serializer(info: MethodInfo) -> Callable[[Any], bytes]:
    from google.cloud import aiplatform_v1

    if info.response in ("Empty", "Operation"):
        return lambda message: bytes(message.SerializeToString())
    response_type = getattr(aiplatform_v1, info.response)
    return lambda message: bytes(response_type.serialize(message))


def _unary(service: JobService, info: MethodInfo) -> grpc.RpcMethodHandler:
    def handle(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return service.call(info.name, request)
        except ApiError as exc:
            context.abort(getattr(grpc.StatusCode, exc.code), exc.message)
        except Exception as exc:  # a bug in the emulator: say so instead of UNKNOWN
            _log.exception("JobService.%s failed", info.name)
            context.abort(
                grpc.StatusCode.INTERNAL, f"emulator error in {info.name}: {type(exc).__name__}: {exc}"
            )

    request_type = info.request_type()
    return grpc.unary_unary_rpc_method_handler(
        handle,
        request_deserializer=request_type.deserialize,
        response_serializer=_serializer(info),
    )


def _unimplemented(method: str) -> grpc.RpcMethodHandler:
    def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(
            grpc.StatusCode.UNIMPLEMENTED,
            f"JobService.{method} is not implemented by the emulator "
            "(it serves CustomJob and HyperparameterTuningJob Create/Get/List/Cancel/Delete)",
        )
        raise AssertionError("unreachable")  # pragma: no cover - abort raises

    return grpc.unary_unary_rpc_method_handler(handle)


class _Handler(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self, service: JobService) -> None:
        self._handlers = {f"/{SERVICE_NAME}/{name}": _unary(service, info) for name, info in METHODS.items()}

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method: str = handler_call_details.method
        handler = self._handlers.get(method)
        if handler is None and method.startswith(f"/{SERVICE_NAME}/"):
            return _unimplemented(method.rsplit("/", 1)[-1])
        return handler


class GrpcServer:
    """Serves ``service`` on ``host:port`` (port 0 picks a free one; see :attr:`port`)."""

    def __init__(
        self,
        service: JobService,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_workers: int = 16,
        extra_handlers: tuple[grpc.GenericRpcHandler, ...] = (),
    ):
        self.host = host
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc")
        )
        self._server.add_generic_rpc_handlers((_Handler(service), *extra_handlers))
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        bound = self._server.add_insecure_port(address)
        if bound == 0:
            raise OSError(f"cannot bind the gRPC server to {host}:{port}")
        self.port: int = bound

    @property
    def target(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float | None = 1.0) -> None:
        self._server.stop(grace).wait()
