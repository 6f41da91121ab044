"""The JobService over gRPC: a ``grpc.server`` with one generic handler for
``google.cloud.aiplatform.v1.JobService``.

Requests are deserialized with the generated proto-plus types (``Type.deserialize``), responses
serialized with ``Type.serialize`` (or ``SerializeToString`` for ``Empty`` and ``Operation``), and
errors are sent with ``context.abort(code, message)``. Every other JobService method answers
UNIMPLEMENTED with a message saying what the emulator serves. The stock ``JobServiceClient`` and
``JobServiceAsyncClient`` work unchanged over an insecure channel.

Bad bytes are the caller's error: a request over ``MAX_MESSAGE_BYTES``, or one the proto
parser refuses (including nesting past protobuf's recursion limit), is INVALID_ARGUMENT, never
INTERNAL (which clients retry as transient). With an access token, every call must carry
``authorization: Bearer <token>`` metadata, or it is UNAUTHENTICATED; without one, a call from another
local account than the emulator's, or from one whose caller could not be identified when its connection
was accepted, is PERMISSION_DENIED, whichever service it is for (server/callers.py). The TCP port is
``AcceptProxy``'s (server/acceptproxy.py): it identifies each connection's caller at accept and
carries the connection to the gRPC server on a private Unix socket.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from vertex_emulator.jobservice.methods import METHODS, ApiError, MethodInfo
from vertex_emulator.jobservice.service import JobService
from vertex_emulator.server import callers
from vertex_emulator.server.acceptproxy import AcceptProxy

__all__ = ["MAX_MESSAGE_BYTES", "SERVICE_NAME", "GrpcServer"]

SERVICE_NAME = "google.cloud.aiplatform.v1.JobService"
#: the largest request handled (the REST side's limit); larger ones are INVALID_ARGUMENT.
MAX_MESSAGE_BYTES = 10 * 1024 * 1024
#: gRPC's own receive limit, above ``MAX_MESSAGE_BYTES`` so that the handler, not the transport
#: (whose RESOURCE_EXHAUSTED clients retry), answers a too-large request; past it gRPC refuses.
_TRANSPORT_MAX_BYTES = 64 * 1024 * 1024

_log = logging.getLogger(__name__)


def _serializer(info: MethodInfo) -> Callable[[Any], bytes]:
    from google.cloud import aiplatform_v1

    if info.response in ("Empty", "Operation"):
        return lambda message: bytes(message.SerializeToString())
    response_type = getattr(aiplatform_v1, info.response)
    return lambda message: bytes(response_type.serialize(message))


def _unary(service: JobService, info: MethodInfo, auth_token: str | None) -> grpc.RpcMethodHandler:
    request_type = info.request_type()

    def handle(raw: bytes, context: grpc.ServicerContext) -> Any:
        _check_token(context, auth_token)
        if len(raw) > MAX_MESSAGE_BYTES:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"Request message size exceeds the limit: {len(raw)} bytes > {MAX_MESSAGE_BYTES} bytes.",
            )
        try:
            request = request_type.deserialize(raw)
        except Exception as exc:  # DecodeError, or nesting past protobuf's recursion limit
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{info.request}: the request does not parse: {type(exc).__name__}: {exc}",
            )
        try:
            return service.call(info.name, request)
        except ApiError as exc:
            context.abort(exc.grpc_status_code, exc.message)
        except Exception as exc:  # a bug in the emulator: say so instead of UNKNOWN
            _log.exception("JobService.%s failed", info.name)
            context.abort(
                grpc.StatusCode.INTERNAL, f"emulator error in {info.name}: {type(exc).__name__}: {exc}"
            )

    return grpc.unary_unary_rpc_method_handler(handle, response_serializer=_serializer(info))


def _has_token(metadata: Any, auth_token: str) -> bool:
    """Whether the call's metadata carries ``authorization: Bearer <auth_token>`` (constant time)."""
    given = next((str(v) for k, v in metadata if k == "authorization"), "")
    return callers.bearer_matches(given, auth_token)


def _check_token(context: grpc.ServicerContext, auth_token: str | None) -> None:
    if auth_token is None:
        return
    if not _has_token(context.invocation_metadata(), auth_token):
        context.abort(
            grpc.StatusCode.UNAUTHENTICATED,
            "this emulator requires its access token: send 'authorization: Bearer <token>' metadata",
        )


def _unimplemented(method: str, auth_token: str | None) -> grpc.RpcMethodHandler:
    def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
        _check_token(context, auth_token)
        context.abort(
            grpc.StatusCode.UNIMPLEMENTED,
            f"JobService.{method} is not implemented by the emulator "
            "(it serves CustomJob and HyperparameterTuningJob Create/Get/List/Cancel/Delete)",
        )
        raise AssertionError("unreachable")  # pragma: no cover - abort raises

    return grpc.unary_unary_rpc_method_handler(handle)


class _TokenInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Refuses a call without the access token, whichever service it is for."""

    def __init__(self, auth_token: str) -> None:
        self._auth_token = auth_token

    def intercept_service(
        self, continuation: Callable[[Any], Any], handler_call_details: grpc.HandlerCallDetails
    ) -> Any:
        if _has_token(handler_call_details.invocation_metadata or (), self._auth_token):
            return continuation(handler_call_details)
        return _refusal(self._auth_token)


class _PeerInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Without a token: refuses a call whose connection was not identified, when it was accepted, as
    the emulator's own user's (server/acceptproxy.py), whichever service it is for."""

    def __init__(self, proxy: AcceptProxy) -> None:
        self._proxy = proxy

    def intercept_service(
        self, continuation: Callable[[Any], Any], handler_call_details: grpc.HandlerCallDetails
    ) -> Any:
        handler = continuation(handler_call_details)
        if handler is None:
            return None

        def checked(behavior: Callable[..., Any] | None) -> Callable[..., Any] | None:
            if behavior is None:
                return None

            def call(request: Any, context: grpc.ServicerContext) -> Any:
                if not callers.caller_allowed(self._proxy.uid_of(context.peer())):
                    context.abort(grpc.StatusCode.PERMISSION_DENIED, callers.PEER_REFUSAL)
                return behavior(request, context)

            return call

        kinds = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")
        return handler._replace(**{kind: checked(getattr(handler, kind)) for kind in kinds})


def _refusal(auth_token: str) -> grpc.RpcMethodHandler:
    def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
        _check_token(context, auth_token)  # aborts: UNAUTHENTICATED
        raise AssertionError("unreachable")  # pragma: no cover - abort raises

    return grpc.unary_unary_rpc_method_handler(handle)


class _Handler(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self, service: JobService, auth_token: str | None) -> None:
        self._auth_token = auth_token
        self._handlers = {
            f"/{SERVICE_NAME}/{name}": _unary(service, info, auth_token) for name, info in METHODS.items()
        }

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method: str = handler_call_details.method
        handler = self._handlers.get(method)
        if handler is None and method.startswith(f"/{SERVICE_NAME}/"):
            return _unimplemented(method.rsplit("/", 1)[-1], self._auth_token)
        return handler


class GrpcServer:
    """Serves ``service`` on ``host:port`` (port 0 picks a free one; see ``port``; an IPv6 address
    such as ``::1`` too); an OSError saying why when the address cannot be bound, never a shared
    port."""

    def __init__(
        self,
        service: JobService,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_workers: int = 16,
        auth_token: str | None = None,
        extra_handlers: tuple[grpc.GenericRpcHandler, ...] = (),
        max_concurrent_rpcs: int = 64,
        idle_timeout_s: float = 60.0,
    ):
        self.host = host = host.strip("[]")
        # the TCP port: its connections' callers identified at accept, then carried to gRPC's
        # private Unix socket (an OSError when host:port cannot be bound)
        self._proxy = AcceptProxy(host, port)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc"),
            options=[
                ("grpc.max_receive_message_length", _TRANSPORT_MAX_BYTES),
                # gRPC sets SO_REUSEPORT by default on Linux (no matter for a Unix socket; kept off)
                ("grpc.so_reuseport", 0),
                # a connection with no call for this long is closed (idle sockets hold no thread here,
                # but they hold memory and a descriptor); the proxy then closes its TCP side
                ("grpc.max_connection_idle_ms", int(idle_timeout_s * 1000)),
            ],
            # calls beyond the workers wait in a bounded queue; past it, RESOURCE_EXHAUSTED
            maximum_concurrent_rpcs=max_concurrent_rpcs,
            # the token, else the caller's account, guards every service served here (extra_handlers
            # too, e.g. the Logging API)
            interceptors=[
                _TokenInterceptor(auth_token) if auth_token is not None else _PeerInterceptor(self._proxy)
            ],
        )
        self._server.add_generic_rpc_handlers((_Handler(service, auth_token), *extra_handlers))
        try:
            bound = self._server.add_insecure_port(f"unix:{self._proxy.backend}")
        except RuntimeError:  # recent grpcio raises; older ones return 0
            bound = 0
        if bound == 0:
            self._proxy.stop()
            raise OSError(errno.EADDRNOTAVAIL, "gRPC could not listen on its private Unix socket")
        self.port: int = self._proxy.port

    @property
    def target(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def start(self) -> None:
        self._server.start()
        self._proxy.start()

    def stop(self, grace: float | None = 1.0) -> None:
        try:
            self._server.stop(grace).wait()
        finally:
            self._proxy.stop()
