"""The HTTP side of the local Cloud Storage JSON API, apart from what its paths mean (api.py): the
listening server, who may call, reading bodies within the listener's deadlines, and the JSON API's
answers and error shape (``{"error": {"code", "message", "errors": [{"reason"...}]}}``).

Who may call (server/callers.py): the emulator's own user, or a caller with its access token; a
request with an ``Origin`` header (a web page) or a ``Host`` that is not a loopback name is refused.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from vertex_emulator.cloud_storage.tree import CHUNK, StorageError
from vertex_emulator.cloud_storage.uploads import UploadSessions
from vertex_emulator.server import callers
from vertex_emulator.server.httpserve import BoundedHTTPServer, Ceilings, Deadlines

if TYPE_CHECKING:
    from vertex_emulator.core.clock import ServiceClock

__all__ = ["STORAGE_HOST", "StorageHTTPServer", "StorageRequestHandler"]

STORAGE_HOST = "127.0.0.1"  # loopback only, whatever --host says
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
log = logging.getLogger("vertex_emulator.cloud_storage.api")


class StorageHTTPServer(BoundedHTTPServer):
    """The listener: the tree's ``root``, the access token, the open resumable uploads."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[StorageRequestHandler],
        root: Path,
        ceilings: Ceilings,
        token: str | None,
    ) -> None:
        super().__init__(address, handler, ceilings, backlog=1024)
        self.root, self.auth_token = root, token
        self.uploads = UploadSessions()
        #: the service's clock, whose wall time an upload's object is written at (None: the machine's)
        self.clock: ServiceClock | None = None


class StorageRequestHandler(Deadlines):
    """One connection's requests: checks the caller, then ``_dispatch`` (api.py) answers; a
    ``StorageError`` becomes the API's error answer, anything else a 500 naming it."""

    server: StorageHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def _dispatch(self, method: str, path: str, query: dict[str, str]) -> None:
        raise NotImplementedError

    # -- answers ----------------------------------------------------------------------------------

    def _base(self) -> str:
        return f"http://{STORAGE_HOST}:{self.server.server_address[1]}"

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            # say so: a client that reuses the connection for its next request (after a refused
            # upload, say) would otherwise find it closed under that request
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(data).encode(), "application/json; charset=UTF-8", headers)

    def _error(self, err: StorageError) -> None:
        self._json(err.code, err.body())

    # -- bodies -----------------------------------------------------------------------------------

    def _length(self) -> int:
        raw = self.headers.get("Content-Length")
        if raw is None:
            return 0
        try:
            length = int(raw)
        except ValueError:
            raise StorageError(400, "invalid", f"Content-Length: not a number ({raw!r})") from None
        if length < 0:
            raise StorageError(400, "invalid", f"Content-Length: must not be negative ({length})")
        return length

    def _body_chunks(self, length: int) -> Iterator[bytes]:
        left = length
        while left > 0:
            self.progress()  # each block within idle_timeout_s of the last
            block = self.rfile.read(min(CHUNK, left))
            if not block:
                raise StorageError(400, "invalid", "the request body ended before Content-Length bytes")
            left -= len(block)
            yield block
        self.busy()

    def _drain(self) -> None:
        with contextlib.suppress(StorageError, OSError, ValueError):
            for _ in self._body_chunks(self._length()):
                pass

    # -- requests ---------------------------------------------------------------------------------

    def _check_origin(self) -> None:
        if not callers.http_caller_allowed(self, self.server.auth_token):
            raise StorageError(403, "forbidden", callers.PEER_REFUSAL)
        if self.headers.get("Origin") is not None:
            raise StorageError(
                403, "forbidden", "requests from web pages (with an Origin header) are refused"
            )
        host = (self.headers.get("Host") or "").lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in _LOOPBACK:
            raise StorageError(403, "forbidden", f"Host: {host!r} is not a loopback name")

    def _route(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        self.busy()
        try:
            self._check_origin()
            if self.headers.get("Transfer-Encoding") is not None:
                raise StorageError(
                    411, "required", "Content-Length is required (chunked bodies are not supported)"
                )
            self._dispatch(method, split.path, query)
        except StorageError as err:
            self._drain_if_needed(method)
            self._error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug or a disk error: answer, and say what, rather than hang up
            log.exception("storage request %s %s failed", method, split.path)
            self.close_connection = True
            self._error(StorageError(500, "backendError", f"the emulator's storage failed: {exc!r}"))

    def _drain_if_needed(self, method: str) -> None:
        # a refused upload's body was not read: the connection cannot be reused
        if method in ("POST", "PUT") or self.headers.get("Transfer-Encoding") is not None:
            self.close_connection = True

    def do_GET(self) -> None:
        self._route(self.command)  # GET, HEAD, POST, PUT, DELETE, PATCH

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_GET
