"""Persistent resources in the job store's database: the ``persistent_resources`` table beside ``jobs``.

A base of ``JobStore`` (core/jobstore.py), so a resource lives in the same SQLite file, under the same
lock, as the jobs that run on it: a snapshot exports both in one step and a restore or reset replaces
both in one transaction (``JobStore.replace_all``). Resources are kept as v1 JSON (camelCase keys, the
``PersistentResource.State`` names, RFC 3339 times), like jobs; the name is the caller's
(``persistent_resource_id``), never drawn.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import json
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from vertex_emulator.core.clock import ServiceClock

__all__ = ["RESOURCE_KEYS", "RESOURCE_SCHEMA", "ResourceRows"]

RESOURCE_SCHEMA = """
CREATE TABLE IF NOT EXISTS persistent_resources (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    parent TEXT NOT NULL,
    state TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS persistent_resources_parent ON persistent_resources (parent, seq);
"""
#: a resource row as ``export_resources`` gives it and ``replace_all`` takes it
RESOURCE_KEYS = ("seq", "name", "parent", "state", "body")


class ResourceRows:
    """The resource table's reads and writes (``JobStore`` provides ``_db``, ``_lock``, ``_writing``
    and ``clock``)."""

    _db: sqlite3.Connection
    _lock: threading.RLock
    clock: ServiceClock

    def _writing(self) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def insert_resource(self, parent: str, resource_id: str, resource: dict[str, Any]) -> dict[str, Any]:
        """Store a new resource ``parent/persistentResources/resource_id`` with its create and update
        times (``resource`` says its state); KeyError when one of that name exists."""
        body = copy.deepcopy(resource)
        with self._lock, self._writing():
            stamp = self.clock.now_rfc3339()
            body.update(
                name=f"{parent}/persistentResources/{resource_id}", createTime=stamp, updateTime=stamp
            )
            try:
                self._db.execute(
                    "INSERT INTO persistent_resources (name, parent, state, body) VALUES (?, ?, ?, ?)",
                    (body["name"], parent, str(body.get("state", "")), json.dumps(body, sort_keys=True)),
                )
            except sqlite3.IntegrityError:
                raise KeyError(body["name"]) from None
        return body

    def get_resource(self, name: str) -> dict[str, Any]:
        """The stored resource; KeyError when there is none."""
        with self._lock:
            row = self._db.execute("SELECT body FROM persistent_resources WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise KeyError(name)
        body: dict[str, Any] = json.loads(row[0])
        return body

    def list_resources(self, parent: str | None = None) -> builtins.list[dict[str, Any]]:
        """Every resource under ``parent`` (None: every parent), in creation order."""
        query, args = "SELECT body FROM persistent_resources ORDER BY seq", tuple[str, ...]()
        if parent is not None:
            query, args = "SELECT body FROM persistent_resources WHERE parent = ? ORDER BY seq", (parent,)
        with self._lock:
            rows = self._db.execute(query, args).fetchall()
        return [json.loads(row[0]) for row in rows]

    def update_resource(self, name: str, fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Apply ``fn`` to the stored resource (in place) and bump its ``updateTime``; KeyError when
        there is none. ``name`` cannot be changed."""
        with self._lock, self._writing():
            body = self.get_resource(name)
            fn(body)
            body["name"] = name
            body["updateTime"] = max(self.clock.now_rfc3339(), str(body.get("updateTime", "")))
            self._db.execute(
                "UPDATE persistent_resources SET state = ?, body = ? WHERE name = ?",
                (str(body.get("state", "")), json.dumps(body, sort_keys=True), name),
            )
        return body

    def delete_resource(self, name: str) -> None:
        """Remove a resource; KeyError when there is none."""
        with self._lock, self._writing():
            if self._db.execute("DELETE FROM persistent_resources WHERE name = ?", (name,)).rowcount == 0:
                raise KeyError(name)

    def export_resources(self) -> builtins.list[dict[str, Any]]:
        """Every resource as stored (``RESOURCE_KEYS``), in creation order: what a snapshot keeps."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join(RESOURCE_KEYS)} FROM persistent_resources ORDER BY seq"
            ).fetchall()
        return [dict(zip(RESOURCE_KEYS, row, strict=True)) for row in rows]

    def _replace_resources(self, rows: builtins.list[dict[str, Any]]) -> None:
        """Inside ``replace_all``'s transaction: every resource replaced by ``rows``."""
        self._db.execute("DELETE FROM persistent_resources")
        self._db.executemany(
            "INSERT INTO persistent_resources (seq, name, parent, state, body) VALUES (?, ?, ?, ?, ?)",
            [tuple(row[key] for key in RESOURCE_KEYS) for row in rows],
        )
