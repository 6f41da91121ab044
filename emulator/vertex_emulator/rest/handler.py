"""The REST port's HTTP side: the listener within its ceilings (server/httpserve.py), who may call, request
bodies within their bounds, the Google JSON error shape, and the routing of each path to the v1 mapping
(v1.py), Cloud Logging (cloud_logging/transports.py), the web pages (web.py), the admin API
(admin.py) and the state's admin API (state.py).

Who may call: a ``Host`` that is not a loopback name or the address served is refused (DNS rebinding),
so is an ``Origin`` other than the emulator's own, a write whose body is not ``application/json``, and,
when the server has an access token, a request without ``Authorization: Bearer <token>`` -- without one,
a connection from another local account than the emulator's (server/callers.py). A body is bounded by
its ``Content-Length`` before it is read (``MAX_BODY_BYTES``, 413) and by its nesting
(``MAX_JSON_DEPTH``, 400); a ``Transfer-Encoding`` body is refused with 411 and the connection closed.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from vertex_emulator.cloud_logging import api as logging_api
from vertex_emulator.cloud_logging import transports as logging_transports
from vertex_emulator.core.errors import ApiError
from vertex_emulator.jobservice.service import JobService
from vertex_emulator.persistent_resources import transports as resource_transports
from vertex_emulator.persistent_resources.service import PersistentResourceService
from vertex_emulator.rest import admin, v1, web
from vertex_emulator.rest import state as state_api
from vertex_emulator.scenario.player import ScenarioSlot
from vertex_emulator.server import callers
from vertex_emulator.server.httpserve import BoundedHTTPServer, Ceilings, Deadlines
from vertex_emulator.server.jsonlimits import json_depth

__all__ = [
    "LINGER_S",
    "LISTEN_BACKLOG",
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "RestHTTPServer",
    "RestHandler",
    "json_depth",
]

_log = logging.getLogger("vertex_emulator.rest")

#: the largest request body read: a longer ``Content-Length`` is answered 413 before reading.
MAX_BODY_BYTES = 10 * 1024 * 1024
#: how deeply JSON arrays and objects may nest in a request body (a CustomJob needs about 8).
MAX_JSON_DEPTH = 64
#: pending connections the listening socket queues (the standard library's default is 5).
LISTEN_BACKLOG = 1024
#: seconds a refused request's unread body is still read (and dropped) before the connection closes.
LINGER_S = 5.0
#: methods that change state: their bodies must be JSON (``Content-Type: application/json``).
_MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class RestHandler(Deadlines):
    """One connection's requests: each is checked (``_check_caller``), then routed (``_route``)."""

    server: RestHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "VertexEmulator/1"
    wbufsize = 64 * 1024  # headers and body leave in one write (flushed after each request)
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # quiet: tests and the CLI print their own lines

    # -- plumbing -----------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data, indent=2).encode() + b"\n", "application/json; charset=utf-8")

    def _send_error(self, error: ApiError) -> None:
        self._send_json(error.code, error.body())

    def _content_length(self) -> int:
        raw_length = self.headers.get("Content-Length") or "0"
        try:
            length = int(raw_length)
        except ValueError:
            length = -1
        if length < 0:
            raise ApiError("INVALID_ARGUMENT", f"Content-Length must be a number (got {raw_length!r})")
        return length

    def _read_body(self) -> bytes:
        length = self._content_length()
        if length > MAX_BODY_BYTES:
            # Refused before reading: the unread body stays on the socket, so the connection ends here.
            raise ApiError(
                "INVALID_ARGUMENT",
                f"Request payload size exceeds the limit: {length} bytes > {MAX_BODY_BYTES} bytes.",
                http=413,
            )
        self._body_read = True
        self.body()  # the whole body within body_timeout_s
        raw = self.rfile.read(length) if length > 0 else b""
        self.busy()
        if len(raw) < length:
            raise ApiError("INVALID_ARGUMENT", f"the body ended after {len(raw)} of {length} bytes")
        return raw

    def _json_body(self) -> dict[str, Any]:
        raw = self._read_body()
        if not raw.strip():
            return {}
        depth = json_depth(raw, MAX_JSON_DEPTH)
        if depth > MAX_JSON_DEPTH:
            raise ApiError(
                "INVALID_ARGUMENT",
                f"Invalid JSON payload received: nested {depth} levels deep, more than {MAX_JSON_DEPTH}",
            )
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise ApiError("INVALID_ARGUMENT", f"Invalid JSON payload received: {exc}") from None
        if not isinstance(data, dict):
            raise ApiError(
                "INVALID_ARGUMENT", "Invalid JSON payload received: the body must be a JSON object"
            )
        return data

    # -- who may call -------------------------------------------------------------------------

    def _check_caller(self, method: str) -> None:
        """Refuse DNS-rebinding ``Host`` names, foreign ``Origin``s, non-JSON writes and bad tokens."""
        server = self.server
        host_header = self.headers.get("Host")
        if host_header is not None and not server.host_allowed(_hostname(host_header)):
            raise ApiError(
                "PERMISSION_DENIED",
                f"Host {host_header!r} is not a name of this emulator (a loopback name or the address "
                "it serves): refused as a possible DNS-rebinding request",
            )
        origin = self.headers.get("Origin")
        if origin is not None and not server.origin_allowed(origin):
            raise ApiError(
                "PERMISSION_DENIED",
                f"Origin {origin!r} is not this emulator's own: cross-site requests are refused",
            )
        if server.auth_token is not None:
            if not callers.bearer_matches(self.headers.get("Authorization"), server.auth_token):
                raise ApiError(
                    "UNAUTHENTICATED",
                    "this emulator requires its access token: send 'Authorization: Bearer <token>'",
                )
        elif not callers.http_caller_allowed(self):  # no token: only its own user (server/callers.py)
            raise ApiError("PERMISSION_DENIED", callers.PEER_REFUSAL)
        if method in _MUTATING and (method != "DELETE" or self._content_length() > 0):
            ctype = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
            if ctype != "application/json":
                raise ApiError(
                    "INVALID_ARGUMENT",
                    f"{method} needs 'Content-Type: application/json' (got {ctype or 'none'!r}); "
                    "other types are refused so that a web page cannot post to the emulator",
                    http=415,
                )

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        query = parse_qs(url.query, keep_blank_values=True)
        self._body_read = False
        chunked = self.headers.get("Transfer-Encoding") is not None
        if chunked or self.headers.get("Content-Length", "0") in ("", "0"):
            self.busy()
        try:
            if chunked:
                # Read or refused, never left on the connection to be taken for the next request
                # (request smuggling): refused, and the connection closed without reading it.
                self.close_connection = True
                raise ApiError(
                    "INVALID_ARGUMENT",
                    "Transfer-Encoding bodies are not accepted: send the body with a Content-Length",
                    http=411,
                )
            self._check_caller(method)
            self._route(method, path, query)
        except ApiError as exc:  # refused before the API ran (its own HTTP status, if any), or by it
            self._send_error(exc)
        except Exception as exc:  # a bug in the emulator: say so as INTERNAL
            _log.exception("%s %s failed", method, path)
            self._send_error(ApiError("INTERNAL", f"emulator error: {type(exc).__name__}: {exc}"))
        finally:
            if chunked:
                self.close_connection = True
            elif not self._body_read and self.headers.get("Content-Length", "0") not in ("", "0"):
                self.close_connection = True  # a body left unread would be taken for the next request
                self._linger = True

    def _route(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        """Answer ``method path`` (the caller already checked)."""
        service = self.server.service
        reads = method in ("GET", "HEAD")
        resources = self.server.resources
        if resources is not None and resource_transports.serves(path):  # persistent_resources/
            self._send(
                200, resource_transports.rest_call(resources, method, path, query, self._json_body), web.JSON
            )
        elif path.startswith("/v1/"):
            self._send(200, v1.call(service, method, path, query, self._json_body), web.JSON)
        elif path in ("/", "/ui", "/ui/") and reads:
            self._send(200, *web.index(service))
        elif path.startswith("/web/") and reads:
            self._send(200, *web.replica_page(service, path, query))
        elif path.startswith("/ui/") and reads:
            self._send(200, *web.job_page(service, path))
        elif path == logging_transports.REST_PATH and method == "POST" and self.server.logs is not None:
            self._send_json(200, logging_transports.rest_list(self.server.logs, self._json_body()))
        elif path == "/emulator/clock" and reads:
            self._send_json(200, admin.clock(service))
        elif path == "/emulator/stats" and reads:
            self._send_json(200, service.stats())
        elif path == "/emulator/faults" and method in ("GET", "HEAD", "PUT"):
            self._send_json(200, admin.faults(service, method, self._json_body))
        elif path == "/emulator/capacity" and method in ("GET", "HEAD", "PUT"):
            self._send_json(200, admin.capacity(service, method, self._json_body))
        elif path.removesuffix("/schema") in admin.SCHEMAS and path.endswith("/schema") and reads:
            self._send_json(200, admin.schema(path.removesuffix("/schema")))
        elif path == "/emulator/scenario" and method in ("GET", "HEAD", "PUT") and self.server.scenario:
            self._send_json(200, admin.scenario(self.server.scenario, method, self._json_body))
        elif path == "/emulator/capacity/preempt" and method == "POST":
            self._send_json(200, admin.preempt(service, self._json_body))
        elif path.startswith(state_api.PREFIX) and self.server.state is not None:
            self._send_json(200, state_api.call(self.server.state, method, path, self._json_body))
        else:
            raise ApiError("NOT_FOUND", f"{method} {path}: no such resource on the Vertex AI emulator")

    def finish(self) -> None:
        super().finish()  # the answer is flushed
        if getattr(self, "_linger", False):
            self._discard_unread_body()

    def _discard_unread_body(self) -> None:
        """Read and drop what the client still sends (for at most ``LINGER_S``), then close.

        Closing a socket with unread data makes the kernel reset the connection, and a client still
        sending its body would then see a reset instead of the 413 or 4xx it was sent; this is the
        "lingering close" of HTTP servers. Nothing is kept in memory.
        """
        sock = self.connection
        try:
            sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + LINGER_S
            while (left := deadline - time.monotonic()) > 0:
                sock.settimeout(left)
                if not sock.recv(65536):
                    break
        except OSError:
            pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")


def _hostname(host_header: str) -> str:
    """The host name of a ``Host`` header value, without port or IPv6 brackets, lower case."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


class RestHTTPServer(BoundedHTTPServer):
    """The REST port's listener: the JobService, the access token, Cloud Logging's API."""

    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        service: JobService,
        auth_token: str | None,
        logs: logging_api.LogEntriesApi | None = None,
        ceilings: Ceilings | None = None,
        scenario: ScenarioSlot | None = None,
        state: state_api.StateKeeper | None = None,
        resources: PersistentResourceService | None = None,
    ) -> None:
        self.service = service
        #: the PersistentResourceService (None: its paths fall to the JobService's NOT_FOUND)
        self.resources = resources
        #: snapshot, restore and reset of the state (``/emulator/state``; None: NOT_FOUND)
        self.state = state
        #: the scenario this emulator plays (``/emulator/scenario``; None: the route answers NOT_FOUND)
        self.scenario = scenario
        self.auth_token = auth_token
        self.bind_host = address[0].strip("[]").lower()
        self.logs = logs
        super().__init__(address, RestHandler, ceilings or Ceilings(), backlog=LISTEN_BACKLOG)

    def host_allowed(self, name: str) -> bool:
        """A loopback name, the address served, or anything when bound to all addresses."""
        if self.bind_host in _WILDCARD_HOSTS:
            return True  # reached by any of the machine's names; the access token guards it
        return name in _LOOPBACK_NAMES or name.endswith(".localhost") or name == self.bind_host

    def origin_allowed(self, origin: str) -> bool:
        url = urlsplit(origin.strip())
        try:
            port = url.port or 80
        except ValueError:
            return False
        return (
            url.scheme == "http"
            and url.hostname is not None
            and self.host_allowed(url.hostname)
            and port == self.server_address[1]
        )
