"""The Cloud Logging v2 read API (``entries.list``) over the logs the emulator keeps for its jobs.

Each replica's supervisor writes every line the replica prints, with its stream and the time it was
read, to ``<state_dir>/logs/<job id>/<replica key>.jsonl``, and the job's driver writes Vertex AI's
own ``service`` lines to ``service.jsonl`` beside it (runtime/replica_output.py, runtime/service_log.py,
runtime/log_records.py). This module serves them as ``LogEntry`` objects shaped as Vertex AI's
(entries.py), through ``LoggingServiceV2.ListLogEntries`` (gRPC) and ``POST /v2/entries:list`` (REST)
(transports.py), so the stock
``google-cloud-logging`` client reads them unchanged. Cloud Logging's ``entries.list`` reference
(cloud.google.com/logging/docs/reference/v2/rest/v2/entries/list) gives the request:
``resourceNames`` (``projects/<id>``), ``filter`` (query.py), ``orderBy`` (``timestamp asc`` or
``timestamp desc``), ``pageSize`` (default 50, at most 1,000) and ``pageToken``.

* Page size in bytes: ``pageSize`` is "the maximum number of results to return" (the same reference),
  and a response may hold fewer, with a ``nextPageToken`` when more may exist. A page also ends before
  its entries pass ``MAX_PAGE_BYTES`` (2 MiB, half of gRPC's default 4 MiB receive limit, which the
  stock clients keep): 1,000 lines of 256 KiB (``MAX_LINE_BYTES``) would make a 250 MiB page that no
  client could read. A page always holds at least one entry, when one is left.

* Severity: stdout lines are INFO and stderr lines ERROR, as on Vertex AI (entries.py).
* Timestamps: a line's ``timestamp`` is when its supervisor read it from the replica's pipe
  (nanoseconds); ``receiveTimestamp`` is the same time. A request serves only the lines stamped at
  or before the moment it began, and reads each file under a shared lock (``RecordLog``'s rule): a
  line is never made readable after a newer one, so a reader that resumes after the last
  ``(timestamp, insertId)`` it saw misses nothing. Cloud Logging does not promise that (late
  arriving entries: the ``bufferWindow`` of its ``entries.tail`` reference).
* Memory: an index of (time, offset) per line (runtime/log_records.py); a request reads from disk only the
  lines its time range and cursor leave, in the files of the jobs and tasks the filter's top level
  names (``LogQuery.sets``), merging the files by time.
* A ``<key>.log`` with no ``<key>.jsonl`` (a state directory from an emulator that kept only the
  plain log, or a file written by hand) is read as stdout lines: each is INFO, stamped when this
  API first reads it -- the file's modification time, or just after every line served before if
  that is later -- so it too is never readable after a newer line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_emulator.cloud_logging.entries import Entry, JobMeta, record_entry, replica_line_entry
from vertex_emulator.cloud_logging.query import LogFilterError, LogQuery, parse_log_filter
from vertex_emulator.core.errors import ApiError
from vertex_emulator.core.gcs import GCS_NOTES
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.runtime.log_records import RECORDS_SUFFIX, RecordIndex
from vertex_emulator.runtime.replica_output import MAX_LINE_BYTES

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_PAGE_BYTES",
    "LogEntriesApi",
]

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
#: A page's entries stop before they pass this many bytes (their JSON, UTF-8): below gRPC's 4 MiB.
MAX_PAGE_BYTES = 2 * 1024 * 1024
_Key = tuple[int, str]


@dataclass
class _Legacy:
    """A plain ``<key>.log`` read as stdout lines (see the module doc)."""

    offset: int = 0
    line_no: int = 0
    last_ts: int = 0
    entries: list[Entry] = field(default_factory=list)


@dataclass
class _Source:
    dir_id: str
    key: str
    meta: JobMeta
    index: RecordIndex | None = None
    legacy: _Legacy | None = None


def _key(entry: Entry) -> _Key:
    return (entry.timestamp, entry.insert_id)


class LogEntriesApi:
    """``entries.list`` over the job logs under ``<state_dir>/logs``, for the jobs in ``store``."""

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
        #: where a page ends in bytes (``MAX_PAGE_BYTES``)
        self.max_page_bytes = MAX_PAGE_BYTES
        self.calls = 0
        self._indexes: dict[tuple[str, str], RecordIndex] = {}
        self._legacy: dict[tuple[str, str], _Legacy] = {}
        self._meta: dict[str, JobMeta] = {}
        self._bound = 0  # the latest request start: what any request may have served is at or before it
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
        # before any file is read: only lines stamped at or before it are served. The service's time
        # (its own lines are stamped with it), never behind the machine's (a replica's lines)
        bound = max(time.time_ns(), self.store.clock.time_ns())
        with self._lock:
            self.calls += 1
        if self.fault is not None:
            code = self.fault("ListLogEntries")
            if code is not None:
                raise ApiError(code, f"injected fault: ListLogEntries failed with {code}")
        projects = self._projects(resource_names)
        try:
            query = parse_log_filter(filter_text)
        except LogFilterError as exc:
            raise ApiError("INVALID_ARGUMENT", str(exc)) from None
        order = " ".join(order_by.split()).lower()
        if order not in ("", "timestamp asc", "timestamp desc"):
            raise ApiError(
                "INVALID_ARGUMENT", f'orderBy must be "timestamp asc" or "timestamp desc" (got {order_by!r})'
            )
        descending = order == "timestamp desc"
        if page_size < 0 or page_size > MAX_PAGE_SIZE:
            raise ApiError(
                "INVALID_ARGUMENT", f"pageSize must be between 0 and {MAX_PAGE_SIZE} (got {page_size})"
            )
        size = page_size or DEFAULT_PAGE_SIZE
        digest = hashlib.sha256(json.dumps([sorted(projects), filter_text, descending]).encode()).hexdigest()[
            :16
        ]
        after = self._decode_token(page_token, digest) if page_token else None
        sources = self._sources(projects, query, bound)
        streams = [self._entries(src, query, bound, after, descending) for src in sources]
        page: list[Entry] = []
        out: list[dict[str, Any]] = []
        more = False
        used = 0
        for entry in heapq.merge(*streams, key=_key, reverse=descending):
            if not query.predicate(entry.fields()):
                continue
            if len(page) == size:
                more = True
                break
            as_json = entry.as_json()
            cost = len(json.dumps(as_json, ensure_ascii=False).encode())
            if page and used + cost > self.max_page_bytes:
                more = True
                break
            used += cost
            page.append(entry)
            out.append(as_json)
        response: dict[str, Any] = {"entries": out}
        if more:
            last = page[-1]
            response["nextPageToken"] = self._encode_token(last.timestamp, last.insert_id, digest)
        return response

    def forget(self) -> None:
        """Drop what was read of the log files (their indexes, the jobs' projects): the files were
        replaced (a restore or reset of the emulator's state, app/state.py)."""
        with self._lock:
            self._indexes.clear()
            self._legacy.clear()
            self._meta.clear()

    # -- reading ------------------------------------------------------------------------------

    def _sources(self, projects: set[str], query: LogQuery, bound: int) -> list[_Source]:
        """The files the request may read, their new lines indexed (and legacy files read)."""
        job_ids = query.sets.get("resource.labels.job_id")
        tasks = query.sets.get("resource.labels.task_name")
        out: list[_Source] = []
        with self._lock:
            served_before, self._bound = self._bound, max(self._bound, bound)
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
                if job_ids is not None and meta.job_id.casefold() not in job_ids:
                    continue
                names = {item.name for item in os.scandir(job_dir.path)}
                for key in sorted(_keys(names)):
                    if tasks is not None and key.casefold() not in tasks:
                        continue
                    source = _Source(dir_id=job_dir.name, key=key, meta=meta)
                    ident = (job_dir.name, key)
                    if f"{key}{RECORDS_SUFFIX}" in names:
                        source.index = self._indexes.get(ident)
                        if source.index is None:
                            path = Path(job_dir.path) / f"{key}{RECORDS_SUFFIX}"
                            source.index = self._indexes[ident] = RecordIndex(path)
                        source.index.refresh()
                    else:
                        source.legacy = self._legacy.setdefault(ident, _Legacy())
                        self._read_legacy(Path(job_dir.path) / f"{key}.log", source, served_before)
                    out.append(source)
        return out

    def _entries(
        self, src: _Source, query: LogQuery, bound: int, after: _Key | None, descending: bool
    ) -> Iterator[Entry]:
        """The source's entries in the request's order: stamped at or before ``bound``, within the
        filter's time range, past the page token's ``after``."""
        since, until = query.since, min(bound, query.until if query.until is not None else bound)
        if after is not None:
            if descending:
                until = min(until, after[0])
            else:
                since = after[0] if since is None else max(since, after[0])
        if src.index is not None:
            lo, hi = src.index.span(since, until)
            records = src.index.read(lo, hi, reverse=descending)
            entries: Iterator[Entry] = (
                record_entry(r, dir_id=src.dir_id, key=src.key, meta=src.meta) for r in records
            )
        else:
            assert src.legacy is not None
            kept = [
                e
                for e in src.legacy.entries
                if (since is None or e.timestamp >= since) and e.timestamp <= until
            ]
            entries = iter(reversed(kept) if descending else kept)
        for entry in entries:
            if after is not None and ((_key(entry) >= after) if descending else (_key(entry) <= after)):
                continue
            yield entry

    def _read_legacy(self, path: Path, src: _Source, served_before: int) -> None:
        state = src.legacy
        assert state is not None
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
        chunk = data[: end + 1]
        state.offset += len(chunk)
        for raw in chunk.split(b"\n")[:-1]:
            text = raw[:MAX_LINE_BYTES].decode("utf-8", errors="replace").rstrip("\r")
            if text in GCS_NOTES or text.startswith("---- emulator: restart "):
                continue  # the emulator's own notes, not the replica's output
            state.line_no += 1
            # later than the file's previous line and than whatever a request may have served
            state.last_ts = max(state.last_ts + 1, served_before + 1, mtime)
            state.entries.append(
                replica_line_entry(
                    text,
                    "stdout",
                    t=state.last_ts,
                    insert_id=f"{src.dir_id}.{src.key}.{state.line_no:09d}",
                    key=src.key,
                    meta=src.meta,
                )
            )

    # -- helpers ------------------------------------------------------------------------------

    @staticmethod
    def _projects(resource_names: Sequence[str]) -> set[str]:
        if not resource_names:
            raise ApiError("INVALID_ARGUMENT", "resourceNames: at least one projects/<id> is required")
        projects: set[str] = set()
        for name in resource_names:
            parts = name.split("/")
            if len(parts) != 2 or parts[0] != "projects" or not parts[1]:
                raise ApiError(
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
    def _decode_token(token: str, digest: str) -> _Key:
        try:
            value = json.loads(base64.urlsafe_b64decode(token.encode()))
            timestamp, insert_id, token_digest = value
            if not isinstance(timestamp, int) or not isinstance(insert_id, str):
                raise ValueError("bad token")
        except (ValueError, TypeError, binascii.Error):
            raise ApiError("INVALID_ARGUMENT", "pageToken: not a token this API returned") from None
        if token_digest != digest:
            raise ApiError(
                "INVALID_ARGUMENT",
                "pageToken: the token belongs to a request with another filter, orderBy or resourceNames",
            )
        return timestamp, insert_id

    def _job_meta(self, job_id: str) -> JobMeta | None:
        meta = self._meta.get(job_id)
        if meta is not None:
            return meta
        job = self.store.by_id(job_id)
        if job is None:
            return None
        name = str(job.get("name", ""))
        parts = name.split("/")
        project = parts[1] if len(parts) > 2 else ""
        meta = JobMeta(project=project, job_id=job_id, trial_id=None)
        if "/customJobs/" in name:
            parent = name.split("/customJobs/")[0]
            for tuning in self.store.list("hyperparameterTuningJobs", parent):
                for trial in tuning.get("trials") or []:
                    if trial.get("customJob") == name:
                        tuning_id = str(tuning["name"]).rsplit("/", 1)[-1]
                        meta = JobMeta(project=project, job_id=tuning_id, trial_id=str(trial.get("id")))
        self._meta[job_id] = meta
        return meta


def _keys(names: set[str]) -> set[str]:
    """The tasks a job directory holds logs of: every ``<key>.jsonl``, and every ``<key>.log``
    (not a package install's) with no ``.jsonl`` beside it."""
    keys = {n[: -len(RECORDS_SUFFIX)] for n in names if n.endswith(RECORDS_SUFFIX)}
    keys |= {n[: -len(".log")] for n in names if n.endswith(".log") and not n.startswith("install-")}
    return keys
