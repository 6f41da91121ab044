"""The JobService over HTTP/JSON (the v1 REST mapping), plus the emulator's web pages and admin API.

Built on the standard library's HTTP server (HTTP/1.1 keep-alive), one thread per connection within
the listener's ceilings (server/httpserve.py: connections, idle, header and body deadlines): the emulator
serves a handful of local clients, so no web framework is needed.

REST mapping, as the stock client's REST transport (``transports/rest_base.py``) sends it::

    POST   /v1/{parent=projects/*/locations/*}/customJobs            body: CustomJob
    GET    /v1/{name=projects/*/locations/*/customJobs/*}
    GET    /v1/{parent=projects/*/locations/*}/customJobs?filter=&pageSize=&pageToken=&readMask=
    POST   /v1/{name=projects/*/locations/*/customJobs/*}:cancel     body: {}
    DELETE /v1/{name=projects/*/locations/*/customJobs/*}            -> Operation

and the same with ``hyperparameterTuningJobs``. Query and body fields are accepted in camelCase or
snake_case; ``$alt=json;enum-encoding=int`` (what the client sends) makes enums integers in the
response, otherwise they are names (what curl users read). Errors use the Google JSON error shape
``{"error": {"code": 404, "message": "...", "status": "NOT_FOUND"}}``.

Other paths:

* ``GET /web/<job-name>/<replica-key>``: a replica's web access page (state and log tail; JSON with
  ``?format=json``), from ``runner.replica_view``.
* ``GET /ui/<job-name>``: a job page (state, output directory, pools, replicas, trial chart and trials,
  error; it reloads itself while the job runs); ``GET /ui/`` (or ``/``):
  the index of every job, finished ones too, newest first (``INDEX_LIMIT``). (The HTML: the pages package.)
* ``GET /emulator/stats``: calls per method, Cancel calls per job and injected faults, as JSON.
* ``GET``/``PUT /emulator/faults``: read or change the fault settings at runtime (JSON; PUT takes a
  partial object).
* ``GET``/``PUT /emulator/capacity``: read or change the GPU capacity settings at runtime (quotas,
  free GPUs, Spot; capacity/settings.py; PUT takes a partial object and wakes the jobs waiting);
  ``POST /emulator/capacity/preempt`` ``{"job": NAME, "replica": KEY}`` preempts a replica of a
  running Spot job now (``replica`` defaults to ``workerpool0-0``).

Every request passes ``_Handler._check_caller`` first, because the emulator runs the commands
its jobs name: a ``Host`` that is not a loopback name or the address served is refused (DNS
rebinding), so is an ``Origin`` other than the emulator's own, a write whose body is not
``application/json`` (a web page's form or "simple request"), and, when the server has an access
token, a request without ``Authorization: Bearer <token>`` -- without one, a connection from
another local account than the emulator's (server/callers.py). A body is bounded by its
``Content-Length`` before it is read (``MAX_BODY_BYTES``, 413) and by its nesting
(``MAX_JSON_DEPTH``, 400, counted in linear time by server/jsonlimits.py). A ``Transfer-Encoding`` (chunked)
body is refused with 411 and the connection closed, so it cannot be read as a next request.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from vertex_emulator import pages
from vertex_emulator.capacity.ledger import PreemptError
from vertex_emulator.capacity.settings import CapacityError, capacity_to_json, update_capacity
from vertex_emulator.cloud_logging import api as logging_api
from vertex_emulator.core.faults import FaultsError, faults_to_json, update_faults
from vertex_emulator.jobservice.service import HTTP_STATUS, KINDS, METHODS, ApiError, JobService, MethodInfo
from vertex_emulator.server import callers
from vertex_emulator.server.httpserve import BoundedHTTPServer, Ceilings, Deadlines
from vertex_emulator.server.jsonlimits import json_depth

__all__ = [
    "INDEX_LIMIT",
    "LISTEN_BACKLOG",
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "RestServer",
    "json_depth",
]

_log = logging.getLogger(__name__)

_KIND_ALT = "|".join(KINDS)
_COLLECTION_RE = re.compile(rf"/v1/(?P<parent>projects/[^/]+/locations/[^/]+)/(?P<kind>{_KIND_ALT})")
_ITEM_RE = re.compile(
    rf"/v1/(?P<name>projects/[^/]+/locations/[^/]+/(?P<kind>{_KIND_ALT})/[^/:]+)(?P<verb>:cancel)?"
)
#: the JobService's other collections: known to the API, not served here.
_OTHER_JOBS_RE = re.compile(
    r"/v1/projects/[^/]+/locations/[^/]+/(?:batchPredictionJobs|dataLabelingJobs|nasJobs|"
    r"modelDeploymentMonitoringJobs)(?:/[^/]+)*(?::\w+)?"
)
_JOB_NAME = rf"projects/[^/]+/locations/[^/]+/(?:{_KIND_ALT})/[^/]+"
_WEB_RE = re.compile(rf"/web/(?P<name>{_JOB_NAME})/(?P<key>[^/]+)")
_UI_RE = re.compile(rf"/ui/(?P<name>{_JOB_NAME})")
_IGNORED_PARAMS = {"$alt", "alt", "$prettyPrint", "prettyPrint", "$fields", "fields", "key"}


def _method(kind: str, verb: str) -> MethodInfo:
    return next(m for m in METHODS.values() if m.kind == kind and m.verb == verb)


#: the largest request body read: a longer ``Content-Length`` is answered 413 before reading.
MAX_BODY_BYTES = 10 * 1024 * 1024
#: how deeply JSON arrays and objects may nest in a request body (a CustomJob needs about 8).
MAX_JSON_DEPTH = 64
#: pending connections the listening socket queues (the standard library's default is 5).
LISTEN_BACKLOG = 1024
#: seconds a refused request's unread body is still read (and dropped) before the connection closes.
LINGER_S = 5.0
#: jobs the index page (``/ui/``) lists, newest first.
INDEX_LIMIT = 500
#: methods that change state: their bodies must be JSON (``Content-Type: application/json``).
_MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class _Refused(Exception):
    """A request refused before the API runs, with its HTTP status and google.rpc.Code name."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class _Handler(Deadlines):
    server: _Server
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

    def _send_error(self, code: str, message: str, status: int | None = None) -> None:
        status = status or HTTP_STATUS.get(code, 500)
        self._send_json(status, {"error": {"code": status, "message": message, "status": code}})

    def _content_length(self) -> int:
        raw_length = self.headers.get("Content-Length") or "0"
        try:
            length = int(raw_length)
        except ValueError:
            length = -1
        if length < 0:
            raise _Refused(400, "INVALID_ARGUMENT", f"Content-Length must be a number (got {raw_length!r})")
        return length

    def _read_body(self) -> bytes:
        length = self._content_length()
        if length > MAX_BODY_BYTES:
            # Refused before reading: the unread body stays on the socket, so the connection ends here.
            raise _Refused(
                413,
                "INVALID_ARGUMENT",
                f"Request payload size exceeds the limit: {length} bytes > {MAX_BODY_BYTES} bytes.",
            )
        self._body_read = True
        self.body()  # the whole body within body_timeout_s
        raw = self.rfile.read(length) if length > 0 else b""
        self.busy()
        if len(raw) < length:
            raise _Refused(400, "INVALID_ARGUMENT", f"the body ended after {len(raw)} of {length} bytes")
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
            raise _Refused(
                403,
                "PERMISSION_DENIED",
                f"Host {host_header!r} is not a name of this emulator (a loopback name or the address "
                "it serves): refused as a possible DNS-rebinding request",
            )
        origin = self.headers.get("Origin")
        if origin is not None and not server.origin_allowed(origin):
            raise _Refused(
                403,
                "PERMISSION_DENIED",
                f"Origin {origin!r} is not this emulator's own: cross-site requests are refused",
            )
        if server.auth_token is not None:
            if not callers.bearer_matches(self.headers.get("Authorization"), server.auth_token):
                raise _Refused(
                    401,
                    "UNAUTHENTICATED",
                    "this emulator requires its access token: send 'Authorization: Bearer <token>'",
                )
        elif not callers.http_caller_allowed(self):  # no token: only its own user (server/callers.py)
            raise _Refused(403, "PERMISSION_DENIED", callers.PEER_REFUSAL)
        if method in _MUTATING and (method != "DELETE" or self._content_length() > 0):
            ctype = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
            if ctype != "application/json":
                raise _Refused(
                    415,
                    "INVALID_ARGUMENT",
                    f"{method} needs 'Content-Type: application/json' (got {ctype or 'none'!r}); "
                    "other types are refused so that a web page cannot post to the emulator",
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
                raise _Refused(
                    411,
                    "INVALID_ARGUMENT",
                    "Transfer-Encoding bodies are not accepted: send the body with a Content-Length",
                )
            self._check_caller(method)
            if path.startswith("/v1/"):
                self._api(method, path, query)
            elif path in ("/", "/ui", "/ui/") and method in ("GET", "HEAD"):
                self._index()
            elif path.startswith("/web/") and method in ("GET", "HEAD"):
                self._web(path, query)
            elif path.startswith("/ui/") and method in ("GET", "HEAD"):
                self._ui(path)
            elif path == logging_api.REST_PATH and method == "POST" and self.server.logs is not None:
                self._send_json(200, logging_api.rest_list(self.server.logs, self._json_body()))
            elif path == "/emulator/stats" and method in ("GET", "HEAD"):
                self._send_json(200, self.server.service.stats())
            elif path == "/emulator/faults" and method in ("GET", "HEAD", "PUT"):
                self._faults(method)
            elif path == "/emulator/capacity" and method in ("GET", "HEAD", "PUT"):
                self._capacity(method)
            elif path == "/emulator/capacity/preempt" and method == "POST":
                self._preempt()
            else:
                raise ApiError("NOT_FOUND", f"{method} {path}: no such resource on the Vertex AI emulator")
        except _Refused as exc:
            self._send_error(exc.code, exc.message, exc.status)
        except (ApiError, logging_api.LoggingApiError) as exc:
            self._send_error(exc.code, exc.message)
        except Exception as exc:  # a bug in the emulator: say so as INTERNAL
            _log.exception("%s %s failed", method, path)
            self._send_error("INTERNAL", f"emulator error: {type(exc).__name__}: {exc}")
        finally:
            if chunked:
                self.close_connection = True
            elif not self._body_read and self.headers.get("Content-Length", "0") not in ("", "0"):
                self.close_connection = True  # a body left unread would be taken for the next request
                self._linger = True

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

    # -- the v1 API ---------------------------------------------------------------------------

    def _api(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        from google.protobuf import json_format

        fields: dict[str, Any] = {}
        collection = _COLLECTION_RE.fullmatch(path)
        item = _ITEM_RE.fullmatch(path)
        if collection and method == "POST":
            info = _method(collection["kind"], "create")
            kind_info = KINDS[info.kind]
            fields = {"parent": collection["parent"], kind_info.body_field: self._json_body()}
        elif collection and method == "GET":
            info = _method(collection["kind"], "list")
            fields = {"parent": collection["parent"]}
            for key, values in query.items():
                if key not in _IGNORED_PARAMS:
                    fields[key] = values[-1]
        elif item and method == "GET" and not item["verb"]:
            info = _method(item["kind"], "get")
            fields = {"name": item["name"]}
        elif item and method == "POST" and item["verb"] == ":cancel":
            info = _method(item["kind"], "cancel")
            self._json_body()  # body "*": nothing beyond the name, which is in the path
            fields = {"name": item["name"]}
        elif item and method == "DELETE" and not item["verb"]:
            info = _method(item["kind"], "delete")
            fields = {"name": item["name"]}
        elif _OTHER_JOBS_RE.fullmatch(path):
            raise ApiError(
                "UNIMPLEMENTED",
                f"{method} {path}: not implemented by the emulator "
                "(it serves CustomJob and HyperparameterTuningJob Create/Get/List/Cancel/Delete)",
            )
        else:
            raise ApiError(
                "NOT_FOUND", f"{method} {path}: no such JobService method on the Vertex AI emulator"
            )
        request_type = info.request_type()
        pb = request_type.pb()()
        try:
            json_format.ParseDict(fields, pb)
        except json_format.ParseError as exc:
            raise ApiError("INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}") from None
        response = self.server.service.call(info.name, request_type.wrap(pb))
        ints = "enum-encoding=int" in ";".join(query.get("$alt", []) + query.get("alt", []))
        response_pb = response if info.response in ("Empty", "Operation") else type(response).pb(response)
        text = json_format.MessageToJson(response_pb, use_integers_for_enums=ints)
        self._send(200, text.encode() + b"\n", "application/json; charset=utf-8")

    # -- admin --------------------------------------------------------------------------------

    def _faults(self, method: str) -> None:
        faults = self.server.service.faults
        if method == "PUT":
            changes = self._json_body()
            try:
                update_faults(faults, changes)
            except FaultsError as exc:
                raise ApiError("INVALID_ARGUMENT", str(exc)) from None
        self._send_json(200, faults_to_json(faults))

    def _gpus(self) -> Any:
        gpus = self.server.service.gpus
        if gpus is None:
            raise ApiError("UNIMPLEMENTED", "this emulator was started without a GPU capacity model")
        return gpus

    def _capacity(self, method: str) -> None:
        gpus = self._gpus()
        if method == "PUT":
            changes = self._json_body()
            try:
                update_capacity(gpus.settings, changes)
            except CapacityError as exc:
                raise ApiError("INVALID_ARGUMENT", str(exc)) from None
            gpus.changed()  # jobs waiting for quota or GPUs try again under the new limits
        self._send_json(200, capacity_to_json(gpus.settings))

    def _preempt(self) -> None:
        body = self._json_body()
        unknown = sorted(set(body) - {"job", "replica"})
        if unknown:
            raise ApiError("INVALID_ARGUMENT", f"{unknown[0]}: unknown field (known: job, replica)")
        job, replica = body.get("job"), body.get("replica", "workerpool0-0")
        if not isinstance(job, str) or not job:
            raise ApiError("INVALID_ARGUMENT", "job: required, the job's resource name")
        if not isinstance(replica, str) or not replica:
            raise ApiError("INVALID_ARGUMENT", "replica: must be a replica key like 'workerpool0-0'")
        try:
            self._gpus().preempt(job, replica)
        except PreemptError as exc:
            raise ApiError(exc.code, exc.message) from None
        self._send_json(200, {"job": job, "replica": replica, "preempted": True})

    # -- pages --------------------------------------------------------------------------------

    def _job(self, name: str) -> dict[str, Any]:
        try:
            return self.server.service.store.get(name)
        except KeyError:
            raise ApiError("NOT_FOUND", f"{name} does not exist.") from None

    def _web(self, path: str, query: dict[str, list[str]]) -> None:
        match = _WEB_RE.fullmatch(path)
        if match is None:
            raise ApiError("NOT_FOUND", f"{path}: expected /web/<job resource name>/<replica key>")
        name, key = match["name"], match["key"]
        job = self._job(name)
        view = self.server.service.runner.replica_view(name, key)
        if view is None:
            raise ApiError("NOT_FOUND", f"{name} has no replica {key}")
        if query.get("format", [""])[-1] == "json":
            self._send_json(200, {"job": name, "job_state": job.get("state"), "replica": key, **view})
            return
        page = pages.replica_page(name, key, job, view)
        self._send(200, page, "text/html; charset=utf-8")

    def _ui(self, path: str) -> None:
        match = _UI_RE.fullmatch(path)
        if match is None:
            raise ApiError("NOT_FOUND", f"{path}: expected /ui/<job resource name>")
        name = match["name"]
        # the runner's configuration says where gs:// lives locally (a runner without one: no local path)
        gcs_root = getattr(getattr(self.server.service.runner, "config", None), "gcs_root", None)
        runner = self.server.service.runner
        page = pages.job_page(name, self._job(name), runner.replica_view, gcs_root=gcs_root)
        self._send(200, page, "text/html; charset=utf-8")

    def _index(self) -> None:
        jobs = self.server.service.store.recent(INDEX_LIMIT + 1)
        self._send(200, pages.index_page(jobs, limit=INDEX_LIMIT), "text/html; charset=utf-8")


def _hostname(host_header: str) -> str:
    """The host name of a ``Host`` header value, without port or IPv6 brackets, lower case."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


class _Server(BoundedHTTPServer):
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        service: JobService,
        auth_token: str | None,
        logs: logging_api.LogEntriesApi | None = None,
        ceilings: Ceilings | None = None,
    ) -> None:
        self.service = service
        self.auth_token = auth_token
        self.bind_host = address[0].strip("[]").lower()
        self.logs = logs
        super().__init__(address, _Handler, ceilings or Ceilings(), backlog=LISTEN_BACKLOG)

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


class RestServer:
    """Serves the REST API and pages for ``service`` on ``host:port`` (port 0 picks a free one)."""

    def __init__(
        self,
        service: JobService,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        auth_token: str | None = None,
        logs: logging_api.LogEntriesApi | None = None,
        ceilings: Ceilings | None = None,
    ) -> None:
        self.host = host
        self._server = _Server((host, port), service, auth_token, logs, ceilings)
        self.port: int = int(self._server.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name="rest", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()
