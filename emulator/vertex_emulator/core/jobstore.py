"""The emulator's job store: Vertex AI v1 jobs as JSON documents in SQLite.

Jobs are kept in the v1 JSON form (camelCase keys, enum names such as ``"JOB_STATE_RUNNING"``,
RFC 3339 timestamps ending in ``Z``) -- exactly what ``CustomJob.to_json`` produces and
``CustomJob.from_json`` takes -- so protos only appear at the API edges. The database lives at
``<state_dir>/jobs.sqlite3`` and survives restarts. One connection is shared by every thread and
guarded by a lock; each write is its own transaction.

A write the disk has no room for (SQLite's ``SQLITE_FULL``, "database or disk is full", or ``ENOSPC``
from what the write does beside the database) raises ``ApiError("UNAVAILABLE", "disk full: ...")``
naming the state directory, so every API surface answers 503 / gRPC UNAVAILABLE, never 500; the job is
left as it was (the transaction is rolled back) and the write can be tried again (the runner retries
its own: runtime/driver.py, ``JobDriver.persist``).
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import errno
import json
import logging
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from vertex_emulator.core import jobstore_repair
from vertex_emulator.core.clock import ServiceClock
from vertex_emulator.core.errors import ApiError
from vertex_emulator.core.jobkinds import JOB_KINDS, TERMINAL_STATES, JobKind
from vertex_emulator.core.outcomes import JobOutcomes
from vertex_emulator.core.resourcerows import RESOURCE_SCHEMA, ResourceRows
from vertex_emulator.core.timefmt import format_rfc3339, now_rfc3339, parse_rfc3339

__all__ = ["JobStore", "disk_full_error"]

_log = logging.getLogger(__name__)


_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    parent TEXT NOT NULL,
    state TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_parent ON jobs (kind, parent, seq);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state);
"""
    + RESOURCE_SCHEMA
)


#: SQLite's result code for "database or disk is full" (``sqlite3.SQLITE_FULL`` from Python 3.11)
_SQLITE_FULL = 13


def _is_full(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.OperationalError):
        return getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL or "disk is full" in str(exc)
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def disk_full_error(state_dir: Path, exc: BaseException) -> ApiError:
    """The UNAVAILABLE every surface answers while the state directory's disk is full."""
    return ApiError(
        "UNAVAILABLE",
        f"disk full: the emulator cannot write its state directory {state_dir} ({exc}); free space on "
        "that disk and retry (jobs already running settle once it has room)",
    )


def _after(previous: str, clock: ServiceClock | None = None) -> str:
    """Now (``clock``'s, or the machine's), or one microsecond after ``previous`` if the clock has not
    moved past it."""
    stamp = now_rfc3339() if clock is None else clock.now_rfc3339()
    if previous and stamp <= previous:
        stamp = format_rfc3339(parse_rfc3339(previous) + timedelta(microseconds=1))
    return stamp


class JobStore(ResourceRows):
    """Thread-safe persistent store of CustomJobs and HyperparameterTuningJobs (and the persistent
    resources they run on, resourcerows.py)."""

    def __init__(self, path: Path, clock: ServiceClock | None = None) -> None:
        self.path = Path(path)
        #: the service's clock (core/clock.py): every time the emulator writes or waits, one per emulator
        self.clock = clock if clock is not None else ServiceClock()
        #: the job outcomes a scenario plays (core/outcomes.py), read where a job's replicas start
        self.outcomes = JobOutcomes()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        #: name -> the job as last written by this store (or read, after a restart), for
        #: ``list_shared``: a List reads every job of its parent, and parsing them again on every call
        #: was most of its cost. Kept in step by insert, update and delete (this process is the only
        #: writer of its state directory).
        self._parsed: dict[str, dict[str, Any]] = {}
        #: what was found damaged at startup and set aside (jobstore_repair.py), one line each.
        self.damage: builtins.list[str] = []
        self._db = jobstore_repair.open_database(self.path, _SCHEMA, self.damage)
        with self._lock:
            jobstore_repair.check_rows(self._db, self.damage)
        for line in self.damage:
            _log.warning("state directory damaged: %s", line)
        self._closed = False

    def quarantine(self, name: str, reason: str) -> None:
        """Move job ``name`` out of the store into ``quarantined_jobs`` (it cannot be served)."""
        with self._lock:
            row = self._db.execute("SELECT seq, body FROM jobs WHERE name = ?", (name,)).fetchone()
            if row is None:
                return
            self._parsed.pop(name, None)
            jobstore_repair.quarantine(self._db, row[0], name, str(row[1]), reason)
            self.damage.append(f"job {name}: {reason}; moved to the quarantined_jobs table")
        _log.warning("job %s quarantined: %s", name, reason)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A write: a full disk raises ``disk_full_error`` (UNAVAILABLE) instead of SQLite's error."""
        try:
            yield
        except (sqlite3.OperationalError, OSError) as exc:
            if _is_full(exc):
                raise disk_full_error(self.path.parent, exc) from exc
            raise

    # -- writes -------------------------------------------------------------------------------

    def insert(self, kind: JobKind, parent: str, job: dict[str, Any]) -> dict[str, Any]:
        """Store a new job: assigns its numeric id, ``name``, create/update times and QUEUED state."""
        if kind not in JOB_KINDS:
            raise ValueError(f"kind must be one of {', '.join(JOB_KINDS)} (got {kind!r})")
        body = copy.deepcopy(job)
        body["state"] = "JOB_STATE_QUEUED"
        with self._lock, self._writing():
            # Stamped under the lock: a job visible to List never has an older createTime than one
            # that is not visible yet (concurrent Creates converge on the oldest job; see the hook).
            stamp = self.clock.now_rfc3339()
            body["createTime"] = stamp
            body["updateTime"] = stamp
            while True:
                job_id = str(secrets.randbelow(9 * 10**18) + 10**18)  # 19 digits, like the service
                body["name"] = f"{parent}/{kind}/{job_id}"
                try:
                    self._db.execute(
                        "INSERT INTO jobs (name, kind, parent, state, body) VALUES (?, ?, ?, ?, ?)",
                        (body["name"], kind, parent, body["state"], json.dumps(body, sort_keys=True)),
                    )
                except sqlite3.IntegrityError:
                    continue  # id collision: draw again
                self._parsed[body["name"]] = body
                return copy.deepcopy(body)

    def update(self, name: str, fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Atomically apply ``fn`` to the stored job (mutating it in place); bumps ``updateTime``.

        ``updateTime`` strictly increases with every update of a job, so ``(name, updateTime)``
        names one revision of it (readers may cache by it).

        Raises KeyError when there is no such job. ``name`` cannot be changed.
        """
        with self._lock, self._writing():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                body = self._get_locked(name)
                previous = str(body.get("updateTime", ""))
                fn(body)
                body["name"] = name
                body["updateTime"] = _after(previous, self.clock)
                state = str(body.get("state", "JOB_STATE_UNSPECIFIED"))
                self._db.execute(
                    "UPDATE jobs SET state = ?, body = ? WHERE name = ?",
                    (state, json.dumps(body, sort_keys=True), name),
                )
            except BaseException:
                if self._db.in_transaction:  # SQLITE_FULL may have rolled it back already
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            self._parsed[name] = body
            return copy.deepcopy(body)

    def delete(self, name: str) -> None:
        """Remove a job. Raises KeyError when there is no such job."""
        with self._lock, self._writing():
            self._parsed.pop(name, None)
            cur = self._db.execute("DELETE FROM jobs WHERE name = ?", (name,))
            if cur.rowcount == 0:
                raise KeyError(name)

    def replace_all(
        self, rows: builtins.list[dict[str, Any]], resources: builtins.list[dict[str, Any]] | None = None
    ) -> None:
        """Every job replaced by ``rows`` (``export``'s form, each checked already), and every persistent
        resource by ``resources`` (``export_resources``' form; None: none), in one transaction: a reader
        sees the state before or after, never a mix. ``[]`` empties the store (and its
        ``quarantined_jobs``)."""
        with self._lock, self._writing():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("DELETE FROM jobs")
                self._db.execute("DELETE FROM quarantined_jobs")
                self._db.executemany(
                    "INSERT INTO jobs (seq, name, kind, parent, state, body) VALUES (?, ?, ?, ?, ?, ?)",
                    [(r["seq"], r["name"], r["kind"], r["parent"], r["state"], r["body"]) for r in rows],
                )
                self._replace_resources(resources or [])
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            self._parsed.clear()

    # -- reads --------------------------------------------------------------------------------

    def get(self, name: str) -> dict[str, Any]:
        """The stored job. Raises KeyError when there is no such job."""
        with self._lock:
            return self._get_locked(name)

    def list(self, kind: str, parent: str) -> list[dict[str, Any]]:
        """Every job of ``kind`` under ``parent``, in creation order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT body FROM jobs WHERE kind = ? AND parent = ? ORDER BY seq", (kind, parent)
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def list_shared(self, kind: str, parent: str) -> builtins.list[dict[str, Any]]:
        """``list``, with each job parsed once per revision and the parse shared by every caller:
        read the dicts, never change them (a List filters and serializes; it does not mutate)."""
        with self._lock:
            names = [
                row[0]
                for row in self._db.execute(
                    "SELECT name FROM jobs WHERE kind = ? AND parent = ? ORDER BY seq", (kind, parent)
                )
            ]
            out = []
            for name in names:
                job = self._parsed.get(name)
                if job is None:  # written before this store started
                    job = self._parsed[name] = self._get_locked(name)
                out.append(job)
        return out

    def by_id(self, job_id: str) -> dict[str, Any] | None:
        """The job (any kind, any parent) whose name ends in ``/<job_id>``, or None."""
        if not job_id.isdigit():
            return None
        with self._lock:
            row = self._db.execute("SELECT body FROM jobs WHERE name LIKE ?", (f"%/{job_id}",)).fetchone()
        if row is None:
            return None
        body: dict[str, Any] = json.loads(row[0])
        return body

    def non_terminal(self) -> builtins.list[dict[str, Any]]:
        """Every job (any kind, any parent) not in a terminal state, in creation order."""
        marks = ", ".join("?" for _ in TERMINAL_STATES)
        with self._lock:
            rows = self._db.execute(
                f"SELECT body FROM jobs WHERE state NOT IN ({marks}) ORDER BY seq",
                tuple(sorted(TERMINAL_STATES)),
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def recent(self, limit: int) -> builtins.list[dict[str, Any]]:
        """The ``limit`` newest jobs (any kind, any parent), newest first, as summaries: ``name``,
        ``state``, ``displayName``, ``createTime``, ``endTime`` (read inside SQLite: a tuning job's
        whole body, trials and all, is not parsed here)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT name, state, json_extract(body, '$.displayName'), json_extract(body, '$.createTime'),"
                " json_extract(body, '$.endTime') FROM jobs ORDER BY seq DESC LIMIT ?",
                (max(0, limit),),
            ).fetchall()
        keys = ("name", "state", "displayName", "createTime", "endTime")
        return [{k: v for k, v in zip(keys, row, strict=True) if v is not None} for row in rows]

    def export(self) -> builtins.list[dict[str, Any]]:
        """Every job as stored (``seq``, ``name``, ``kind``, ``parent``, ``state``, ``body`` as JSON text),
        in creation order, read in one step: what a snapshot keeps and ``replace_all`` takes."""
        keys = ("seq", "name", "kind", "parent", "state", "body")
        with self._lock:
            rows = self._db.execute(f"SELECT {', '.join(keys)} FROM jobs ORDER BY seq").fetchall()
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()

    def _get_locked(self, name: str) -> dict[str, Any]:
        row = self._db.execute("SELECT body FROM jobs WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise KeyError(name)
        body: dict[str, Any] = json.loads(row[0])
        return body
