"""The emulator's API errors, as ``google.api_core.exceptions`` classes: the library the stock clients
raise their errors with already knows each google.rpc.Code's HTTP status and gRPC code, so the emulator
keeps no table of its own.

``ApiError("NOT_FOUND", message)`` is an instance of api_core's ``NotFound`` (through a subclass of
both): ``.code`` is the HTTP status, ``.grpc_status_code`` the gRPC code, ``.status`` the code's name
(the ``status`` of Google's JSON error body), ``.message`` the message. Every port answers from these:
the REST handler sends ``body()`` with ``code`` as the HTTP status, the gRPC servers abort with
``grpc_status_code`` and ``message``. api_core gives ``UNKNOWN`` and ``DATA_LOSS`` no HTTP status; the
emulator answers them 500, the "HTTP Mapping" of google/rpc/code.proto (and of
cloud.google.com/apis/design/errors). A request refused before an API runs may carry an HTTP status of
its own (``http=413`` for a body over the limit, with the status ``INVALID_ARGUMENT``).

``StorageError(404, "notFound", message)`` is Cloud Storage's JSON API error (an HTTP status and an
error reason, no google.rpc.Code): an instance of the api_core class of that HTTP status (``NotFound``),
as the stock storage client raises for such an answer, with the reason in its ``errors``.
"""

from __future__ import annotations

import types
from typing import Any

import grpc
from google.api_core import exceptions

__all__ = ["ApiError", "StorageError", "http_status"]

#: google/rpc/code.proto's "HTTP Mapping" of the codes whose api_core class has ``code = None``.
_GOOGLE_HTTP_MAPPING = {"UNKNOWN": 500, "DATA_LOSS": 500}


def _api_core_class(status: str) -> type[exceptions.GoogleAPICallError]:
    """api_core's exception class of the google.rpc.Code named ``status`` (``KeyError`` if none)."""
    code = grpc.StatusCode[status]
    if code is grpc.StatusCode.OK:
        raise KeyError(status)
    cls: type[exceptions.GoogleAPICallError] = exceptions.exception_class_for_grpc_status(code)  # type: ignore[no-untyped-call]
    return cls


def http_status(status: str) -> int:
    """The HTTP status of the google.rpc.Code named ``status``: api_core's, else Google's documented one."""
    code = _api_core_class(status).code
    return int(code) if code is not None else _GOOGLE_HTTP_MAPPING[status]


def _mixed(
    base: type[Any],
    api_core_class: type[exceptions.GoogleAPICallError],
    prefix: str = "",
    attrs: dict[str, Any] | None = None,
) -> type[Any]:
    """A class named as ``api_core_class`` (after ``prefix``) deriving from both ``base`` and it."""

    def body(namespace: dict[str, Any]) -> None:
        namespace.update(
            __module__=__name__, __doc__=f"{base.__name__} as api_core's {api_core_class.__name__}."
        )
        namespace.update(attrs or {})

    return types.new_class(prefix + api_core_class.__name__, (base, api_core_class), exec_body=body)


class ApiError(exceptions.GoogleAPICallError):
    """A google.rpc.Code error: ``ApiError(status_name, message)`` is an instance of the per-code subclass
    that also derives from api_core's class of that code (see the module doc)."""

    code: int
    grpc_status_code: grpc.StatusCode

    def __new__(cls, status: str, message: str, *, http: int | None = None) -> ApiError:
        klass = _RPC_CLASSES[status] if cls is ApiError else cls
        instance: ApiError = Exception.__new__(klass)
        return instance

    def __init__(self, status: str, message: str, *, http: int | None = None) -> None:
        super().__init__(message)  # type: ignore[no-untyped-call]
        if http is not None:
            self.code = http

    @property
    def status(self) -> str:
        """The google.rpc.Code name (``NOT_FOUND``...): the JSON error body's ``status``."""
        return str(self.grpc_status_code.name)

    def body(self) -> dict[str, Any]:
        """Google's JSON error body: ``{"error": {"code", "message", "status"}}``."""
        return {"error": {"code": int(self.code), "message": self.message, "status": self.status}}

    def __str__(self) -> str:
        return f"{self.status}: {self.message}"


def _rpc_class(status: str) -> type[ApiError]:
    api_core_class = _api_core_class(status)
    extra = {"code": _GOOGLE_HTTP_MAPPING[status]} if api_core_class.code is None else {}
    cls: type[ApiError] = _mixed(ApiError, api_core_class, attrs=extra)
    return cls


_RPC_CLASSES: dict[str, type[ApiError]] = {
    code.name: _rpc_class(code.name) for code in grpc.StatusCode if code is not grpc.StatusCode.OK
}


class StorageError(exceptions.GoogleAPICallError):
    """A Cloud Storage JSON API error: ``StorageError(http_status, reason, message)`` is an instance of
    api_core's class of that HTTP status when it has one (see the module doc)."""

    code: int

    def __new__(cls, status: int, reason: str, message: str) -> StorageError:
        klass = _storage_class(status) if cls is StorageError else cls
        instance: StorageError = Exception.__new__(klass)
        return instance

    def __init__(self, status: int, reason: str, message: str) -> None:
        error = {"message": message, "domain": "global", "reason": reason}
        super().__init__(message, errors=(error,))  # type: ignore[no-untyped-call]
        self.code = status

    @property
    def status(self) -> int:
        """The HTTP status (``code``, by the name the storage handler sends it under)."""
        return self.code

    @property
    def reason(self) -> str:
        """The API's error reason (``notFound``, ``invalid``...)."""
        return str(self.errors[0]["reason"])

    def body(self) -> dict[str, Any]:
        """The JSON API's error body: ``{"error": {"code", "message", "errors": [...]}}``."""
        return {"error": {"code": int(self.code), "message": self.message, "errors": list(self.errors)}}


#: built on first use (two threads may both build one: either serves, as both derive from the same two)
_STORAGE_CLASSES: dict[int, type[StorageError]] = {}


def _storage_class(status: int) -> type[StorageError]:
    """``StorageError`` mixed with api_core's class of HTTP ``status`` (itself when api_core has none)."""
    if status not in _STORAGE_CLASSES:
        api_core_class = exceptions.exception_class_for_http_status(status)  # type: ignore[no-untyped-call]
        _STORAGE_CLASSES[status] = (
            StorageError if api_core_class.code is None else _mixed(StorageError, api_core_class, "Storage")
        )
    return _STORAGE_CLASSES[status]
