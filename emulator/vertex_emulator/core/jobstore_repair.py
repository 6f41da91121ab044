"""A damaged state directory: the job database opened anyway, the damage reported and set aside.

A truncated or corrupt ``jobs.sqlite3`` (a full disk, a copy made while the emulator wrote, a file
edited by hand) stopped the emulator from starting with a raw traceback, and one row that does not
parse stopped it too (a running job's, read at recovery) or made List answer 500 for the whole
parent (a finished job's). At startup:

* a database SQLite cannot read is moved to ``<state_dir>/quarantine/`` (with its ``-wal`` and
  ``-shm`` files), and the rows that can still be read from it are copied into a new one;
* every row whose body is not a JSON object naming itself, with a ``createTime``, is moved out of
  ``jobs`` into the ``quarantined_jobs`` table, with the reason.

Each step is one line of ``JobStore.damage`` (logged as a warning); every good job is kept.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

__all__ = ["QUARANTINE_SCHEMA", "check_rows", "open_database", "row_problem"]

log = logging.getLogger(__name__)

QUARANTINE_SCHEMA = """
CREATE TABLE IF NOT EXISTS quarantined_jobs (
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    reason TEXT NOT NULL,
    quarantined TEXT NOT NULL
);
"""


def _connect(path: Path, schema: str) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")
        db.executescript(schema + QUARANTINE_SCHEMA)
        db.execute("SELECT count(*) FROM jobs").fetchone()
        if db.execute("PRAGMA quick_check").fetchone() != ("ok",):
            raise sqlite3.DatabaseError("PRAGMA quick_check found damage")
    except BaseException:
        db.close()
        raise
    return db


def _salvage(path: Path) -> list[tuple[Any, ...]]:
    """The ``jobs`` rows still readable from a damaged database, in order, until the damage."""
    rows: list[tuple[Any, ...]] = []
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as old:
            for row in old.execute("SELECT name, kind, parent, state, body FROM jobs ORDER BY seq"):
                rows.append(tuple(row))
    except sqlite3.Error:
        pass  # what was read before the damage is kept
    return rows


def open_database(path: Path, schema: str, damage: list[str]) -> sqlite3.Connection:
    """The job database at ``path``; if SQLite cannot read it, a new one holding what could be read,
    the old file moved to ``quarantine/`` beside it (reported in ``damage``)."""
    try:
        return _connect(path, schema)
    except sqlite3.DatabaseError as exc:
        reason = f"{type(exc).__name__}: {exc}"
    rows = _salvage(path)
    where = path.parent / "quarantine"
    where.mkdir(mode=0o700, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    moved = where / f"{path.name}.{stamp}"
    for suffix in ("", "-wal", "-shm"):
        src = path.with_name(path.name + suffix)
        if src.exists():
            shutil.move(str(src), str(moved) + suffix)
    db = _connect(path, schema)
    for row in rows:
        try:
            db.execute("INSERT INTO jobs (name, kind, parent, state, body) VALUES (?, ?, ?, ?, ?)", row)
        except sqlite3.Error:
            continue
    damage.append(
        f"{path.name}: the database could not be read ({reason}); moved to {moved}, "
        f"{len(rows)} job(s) recovered from it"
    )
    return db


def row_problem(name: object, body: object) -> str | None:
    """Why a stored row cannot be served (None: it can)."""
    if not isinstance(body, str):
        return "the body is not text"
    try:
        job = json.loads(body)
    except (ValueError, RecursionError) as exc:
        return f"the body is not JSON ({exc})"
    if not isinstance(job, dict):
        return "the body is not a JSON object"
    if job.get("name") != name:
        return f"the body names {job.get('name')!r}, not {name!r}"
    if not isinstance(job.get("createTime"), str) or not isinstance(job.get("state", ""), str):
        return "createTime or state is missing or not a string"
    return None


def check_rows(db: sqlite3.Connection, damage: list[str]) -> None:
    """Move every row that cannot be served to ``quarantined_jobs`` (reported in ``damage``)."""
    bad = []
    for seq, name, body in db.execute("SELECT seq, name, body FROM jobs"):
        problem = row_problem(name, body)
        if problem is not None:
            bad.append((seq, str(name), str(body), problem))
    for seq, name, body, problem in bad:
        quarantine(db, seq, name, body, problem)
        damage.append(f"job {name}: {problem}; moved to the quarantined_jobs table")


def quarantine(db: sqlite3.Connection, seq: int, name: str, body: str, reason: str) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(
            "INSERT INTO quarantined_jobs (name, body, reason, quarantined) VALUES (?, ?, ?, ?)",
            (name, body, reason, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
        )
        db.execute("DELETE FROM jobs WHERE seq = ?", (seq,))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
