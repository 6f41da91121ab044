"""The Cloud Logging v2 read API (``entries.list``) over the replica logs the emulator keeps.

The runner writes each replica's stdout and stderr to ``<state_dir>/logs/<job id>/<replica key>.log``
(custom_job.py). This module turns every complete line of those files into a ``LogEntry`` shaped as
Vertex AI's own custom-job and tuning-trial entries are, and serves
``LoggingServiceV2.ListLogEntries`` (gRPC) and ``POST /v2/entries:list`` (REST), so the stock
``google-cloud-logging`` client reads them unchanged.

The entry shape follows Vertex AI and the gcloud CLI that streams its logs (``gcloud ai custom-jobs
stream-logs``, ``command_lib/ai/log_util.py``): ``resource.type`` is ``ml_job`` with the labels
``project_id``, ``job_id`` and ``task_name`` (the replica key, ``workerpool0-0``); a tuning trial's
lines carry its tuning job's id as ``job_id`` and the trial id in the entry label
``ml.googleapis.com/trial_id``; ``logName`` is ``projects/<project>/logs/<replica key>``. Cloud Logging's
``entries.list`` reference (cloud.google.com/logging/docs/reference/v2/rest/v2/entries/list) gives
the request: ``resourceNames`` (``projects/<id>``), ``filter``, ``orderBy`` (``timestamp asc`` or
``timestamp desc``), ``pageSize`` (default 50, at most 1,000) and ``pageToken``.

Where the emulator must differ (docs/emulator.md says so too):

* Severity. Vertex AI gives stdout lines INFO and stderr lines ERROR, and a JSON line with a
  ``severity`` field that severity. The runner writes both streams to one file, so the emulator
  reads a line's severity from its text: a JSON object's ``severity``; a line starting with a level
  name (``WARNING``, ``ERROR:root:...``, ``CRITICAL``...) or an absl prefix (``W1201``, ``E1201``)
  that level; a Python traceback (from ``Traceback (most recent call last):`` through its final
  ``SomeError: ...`` line) ERROR; anything else INFO.
* Timestamps. Lines carry no time of their own; a line's ``timestamp`` is the log file's
  modification time when the emulator first reads it (never earlier than it was printed), or just
  after the last line read before it if that is later: a line read later always sorts later, so a
  reader that resumes after the last (timestamp, insertId) it saw misses nothing, and one replica's
  lines sort in the order it printed them.
  Files are read when a request comes in. After an emulator restart, the lines already written get
  the file's modification time at that first read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_emulator.gcs import GCS_NOTE
from vertex_emulator.jobkinds import SEVERITIES
from vertex_emulator.log_filter import (
    LogFilterError,
    LogPredicate,
    compile_log_filter,
)
from vertex_emulator.store import JobStore
from vertex_emulator.timefmt import format_rfc3339_nanos

__all__ = [
    "GRPC_SERVICE",
    "MAX_LINE_BYTES",
    "REST_PATH",
    "LogEntriesApi",
    "LoggingApiError",
    "grpc_handler",
    "rest_list",
]

GRPC_SERVICE = "google.logging.v2.LoggingServiceV2"
REST_PATH = "/v2/entries:list"
#: Cloud Logging's limit on one entry; longer lines are cut there.
MAX_LINE_BYTES = 256 * 1024
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
RESOURCE_TYPE = "ml_job"
TRIAL_LABEL = "ml.googleapis.com/trial_id"

_SEVERITY_NAMES = {number: name for name, number in SEVERITIES.items()}
# fixed patterns only (no user input): a level word at the start of a line, or an absl prefix
_LEVEL_RE = re.compile(r"(?:\[?)(DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL)\b")
_ABSL_RE = re.compile(r"([DIWEF])\d{4} ")
_ABSL = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}
_TRACEBACK_END_RE = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b")


class LoggingApiError(Exception):
    """A request the Logging API refuses: ``code`` is a gRPC status name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class _JobMeta:
    project: str
    job_id: str  # the id Vertex AI logs under: the tuning job's for a trial
    trial_id: str | None


@dataclass
class _Entry:
    timestamp: int
    receive: int
    insert_id: str
    severity: int
    text: str | None
    json_payload: dict[str, Any] | None
    replica: str
    meta: _JobMeta

    def fields(self) -> dict[str, Any]:
        """The field map the filter evaluates."""
        meta = self.meta
        out: dict[str, Any] = {
            "resource.type": RESOURCE_TYPE,
            "resource.labels.project_id": meta.project,
            "resource.labels.job_id": meta.job_id,
            "resource.labels.task_name": self.replica,
            "logName": f"projects/{meta.project}/logs/{self.replica}",
            "severity": self.severity,
            "timestamp": self.timestamp,
            "receiveTimestamp": self.receive,
            "insertId": self.insert_id,
        }
        if meta.trial_id is not None:
            out[f"labels.{TRIAL_LABEL}"] = meta.trial_id
        if self.json_payload is not None:
            for key, value in self.json_payload.items():
                if isinstance(value, (str, int, float, bool)):
                    out[f"jsonPayload.{key}"] = str(value)
            out["payload"] = json.dumps(self.json_payload)
        else:
            out["textPayload"] = self.text
            out["payload"] = self.text
        return out

    def as_json(self) -> dict[str, Any]:
        """The entry in the v2 JSON form (``LogEntry``)."""
        meta = self.meta
        entry: dict[str, Any] = {
            "logName": f"projects/{meta.project}/logs/{self.replica}",
            "resource": {
                "type": RESOURCE_TYPE,
                "labels": {"project_id": meta.project, "job_id": meta.job_id, "task_name": self.replica},
            },
            "timestamp": format_rfc3339_nanos(self.timestamp),
            "receiveTimestamp": format_rfc3339_nanos(self.receive),
            "severity": _SEVERITY_NAMES.get(self.severity, "DEFAULT"),
            "insertId": self.insert_id,
        }
        if meta.trial_id is not None:
            entry["labels"] = {TRIAL_LABEL: meta.trial_id}
        if self.json_payload is not None:
            entry["jsonPayload"] = self.json_payload
        else:
            entry["textPayload"] = self.text
        return entry


@dataclass
class _FileState:
    offset: int = 0
    line_no: int = 0
    last_ts: int = 0
    in_traceback: bool = False
    entries: list[_Entry] = field(default_factory=list)


def _classify(line: str, state: _FileState) -> tuple[int, dict[str, Any] | None]:
    """(severity, jsonPayload or None) for one line; tracks tracebacks across lines in ``state``."""
    stripped = line.lstrip()
    if stripped.startswith("{") and stripped.rstrip().endswith("}"):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict):
            raw = data.pop("severity", None)
            level = SEVERITIES.get(str(raw).upper(), SEVERITIES["INFO"]) if raw is not None else 200
            return level, data
    if line.startswith("Traceback (most recent call last)"):
        state.in_traceback = True
        return SEVERITIES["ERROR"], None
    if state.in_traceback:
        if line.startswith((" ", "\t")) or not line.strip():
            return SEVERITIES["ERROR"], None
        state.in_traceback = False
        if _TRACEBACK_END_RE.match(line):
            return SEVERITIES["ERROR"], None
    match = _LEVEL_RE.match(line)
    if match:
        word = match.group(1)
        name = {"WARN": "WARNING", "FATAL": "CRITICAL"}.get(word, word)
        return SEVERITIES[name], None
    absl = _ABSL_RE.match(line)
    if absl:
        return SEVERITIES[_ABSL[absl.group(1)]], None
    return SEVERITIES["INFO"], None


class LogEntriesApi:
    """``entries.list`` over the replica logs under ``<state_dir>/logs``, for the jobs in ``store``."""

    def __init__(
        self,
        store: JobStore,
        state_dir: Path,
        *,
        fault: Callable[[str], str | None] | None = None,
    ) -> None:
        self.store = store
        self.log_root = Path(state_dir) / "logs"
        #: draws an injected fault for a method name (the JobService's fault injector), or None.
        self.fault = fault
        self.calls = 0
        self._files: dict[tuple[str, str], _FileState] = {}
        self._meta: dict[str, _JobMeta] = {}
        self._last_ts = 0
        self._lock = threading.Lock()

    # -- the API ------------------------------------------------------------------------------

    def list_entries(
        self,
        resource_names: Sequence[str],
        filter_text: str = "",
        order_by: str = "",
        page_size: int = 0,
        page_token: str = "",
    ) -> dict[str, Any]:
        """One ``entries.list`` page as v2 JSON: ``{"entries": [...], "nextPageToken": "..."}``."""
        with self._lock:
            self.calls += 1
        if self.fault is not None:
            code = self.fault("ListLogEntries")
            if code is not None:
                raise LoggingApiError(code, f"injected fault: ListLogEntries failed with {code}")
        projects = self._projects(resource_names)
        try:
            predicate: LogPredicate = compile_log_filter(filter_text)
        except LogFilterError as exc:
            raise LoggingApiError("INVALID_ARGUMENT", str(exc)) from None
        order = " ".join(order_by.split()).lower()
        if order not in ("", "timestamp asc", "timestamp desc"):
            raise LoggingApiError(
                "INVALID_ARGUMENT", f'orderBy must be "timestamp asc" or "timestamp desc" (got {order_by!r})'
            )
        descending = order == "timestamp desc"
        if page_size < 0 or page_size > MAX_PAGE_SIZE:
            raise LoggingApiError(
                "INVALID_ARGUMENT", f"pageSize must be between 0 and {MAX_PAGE_SIZE} (got {page_size})"
            )
        size = page_size or DEFAULT_PAGE_SIZE
        digest = hashlib.sha256(json.dumps([sorted(projects), filter_text, descending]).encode()).hexdigest()[
            :16
        ]
        after = self._decode_token(page_token, digest) if page_token else None
        entries = self._snapshot(projects)
        entries.sort(key=lambda e: (e.timestamp, e.insert_id), reverse=descending)
        page: list[_Entry] = []
        more = False
        for entry in entries:
            key = (entry.timestamp, entry.insert_id)
            if after is not None and ((key <= after) if not descending else (key >= after)):
                continue
            if not predicate(entry.fields()):
                continue
            if len(page) == size:
                more = True
                break
            page.append(entry)
        response: dict[str, Any] = {"entries": [e.as_json() for e in page]}
        if more:
            last = page[-1]
            response["nextPageToken"] = self._encode_token(last.timestamp, last.insert_id, digest)
        return response

    # -- helpers ------------------------------------------------------------------------------

    @staticmethod
    def _projects(resource_names: Sequence[str]) -> set[str]:
        if not resource_names:
            raise LoggingApiError("INVALID_ARGUMENT", "resourceNames: at least one projects/<id> is required")
        projects: set[str] = set()
        for name in resource_names:
            parts = name.split("/")
            if len(parts) != 2 or parts[0] != "projects" or not parts[1]:
                raise LoggingApiError(
                    "INVALID_ARGUMENT",
                    f"resourceNames: the emulator serves projects/<id> (got {name[:200]!r})",
                )
            projects.add(parts[1])
        return projects

    @staticmethod
    def _encode_token(timestamp: int, insert_id: str, digest: str) -> str:
        raw = json.dumps([timestamp, insert_id, digest]).encode()
        return base64.urlsafe_b64encode(raw).decode()

    @staticmethod
    def _decode_token(token: str, digest: str) -> tuple[int, str]:
        try:
            value = json.loads(base64.urlsafe_b64decode(token.encode()))
            timestamp, insert_id, token_digest = value
            if not isinstance(timestamp, int) or not isinstance(insert_id, str):
                raise ValueError("bad token")
        except (ValueError, TypeError, binascii.Error):
            raise LoggingApiError("INVALID_ARGUMENT", "pageToken: not a token this API returned") from None
        if token_digest != digest:
            raise LoggingApiError(
                "INVALID_ARGUMENT",
                "pageToken: the token belongs to a request with another filter, orderBy or resourceNames",
            )
        return timestamp, insert_id

    def _job_meta(self, job_id: str) -> _JobMeta | None:
        meta = self._meta.get(job_id)
        if meta is not None:
            return meta
        job = self.store.by_id(job_id)
        if job is None:
            return None
        name = str(job.get("name", ""))
        parts = name.split("/")
        project = parts[1] if len(parts) > 2 else ""
        meta = _JobMeta(project=project, job_id=job_id, trial_id=None)
        if "/customJobs/" in name:
            parent = name.split("/customJobs/")[0]
            for tuning in self.store.list("hyperparameterTuningJobs", parent):
                for trial in tuning.get("trials") or []:
                    if trial.get("customJob") == name:
                        tuning_id = str(tuning["name"]).rsplit("/", 1)[-1]
                        meta = _JobMeta(project=project, job_id=tuning_id, trial_id=str(trial.get("id")))
        self._meta[job_id] = meta
        return meta

    def _snapshot(self, projects: set[str]) -> list[_Entry]:
        """Read every replica log's new lines, then return the entries of ``projects``."""
        out: list[_Entry] = []
        with self._lock:
            try:
                job_dirs = sorted(os.scandir(self.log_root), key=lambda d: d.name)
            except FileNotFoundError:
                return out
            for job_dir in job_dirs:
                if not job_dir.is_dir():
                    continue
                meta = self._job_meta(job_dir.name)
                if meta is None or meta.project not in projects:
                    continue
                for item in sorted(os.scandir(job_dir.path), key=lambda d: d.name):
                    if not item.name.endswith(".log") or item.name.startswith("install-"):
                        continue
                    replica = item.name[: -len(".log")]
                    state = self._files.setdefault((job_dir.name, replica), _FileState())
                    self._read_new(Path(item.path), job_dir.name, replica, meta, state)
                    out.extend(state.entries)
        return out

    def _read_new(self, path: Path, job_id: str, replica: str, meta: _JobMeta, state: _FileState) -> None:
        try:
            with open(path, "rb") as fh:
                fh.seek(state.offset)
                data = fh.read()
                mtime = os.fstat(fh.fileno()).st_mtime_ns
        except OSError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return  # no complete line yet
        received = max(mtime, _now_ns())
        chunk = data[: end + 1]
        state.offset += len(chunk)
        for raw in chunk.split(b"\n")[:-1]:
            text = raw[:MAX_LINE_BYTES].decode("utf-8", errors="replace").rstrip("\r")
            if text == GCS_NOTE:
                continue  # the emulator's own note, not the replica's output
            severity, payload = _classify(text, state)
            state.line_no += 1
            # later than every line read before (any replica's): a reader's (timestamp, insertId)
            # cursor never skips a line read after it
            state.last_ts = self._last_ts = max(state.last_ts + 1, self._last_ts + 1, mtime)
            state.entries.append(
                _Entry(
                    timestamp=state.last_ts,
                    receive=max(received, state.last_ts),
                    insert_id=f"{job_id}.{replica}.{state.line_no:09d}",
                    severity=severity,
                    text=None if payload is not None else text,
                    json_payload=payload,
                    replica=replica,
                    meta=meta,
                )
            )


def _now_ns() -> int:
    import time

    return time.time_ns()


# -- transports ----------------------------------------------------------------------------------


def rest_list(api: LogEntriesApi, body: Mapping[str, Any]) -> dict[str, Any]:
    """``POST /v2/entries:list`` with a JSON ``body``; returns the JSON response."""
    from google.cloud.logging_v2.types import ListLogEntriesRequest
    from google.protobuf import json_format

    pb = ListLogEntriesRequest.pb()()
    try:
        json_format.ParseDict(dict(body), pb)
    except json_format.ParseError as exc:
        raise LoggingApiError("INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}") from None
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
        except LoggingApiError as exc:
            context.abort(getattr(grpc.StatusCode, exc.code), exc.message)
        return bytes(out.SerializeToString())

    return grpc.unary_unary_rpc_method_handler(
        handle,
        request_deserializer=ListLogEntriesRequest.pb().FromString,
        response_serializer=lambda data: data,
    )
