"""Snapshots of the emulator's state on disk: ``<state_dir>/snapshots/<name>/``, written, read, listed
and deleted here (app/state.py stops the jobs and swaps the state; rest/state.py serves it).

A snapshot is a directory the emulator alone names and places, under its own state directory (mode
0700): a caller gives a name, never a path. It holds::

    snapshot.json   the manifest: version, name, createTime, bytes, jobs, logFiles, objects, and the
                    capacity and fault settings in force (as ``/emulator/capacity`` and
                    ``/emulator/faults`` answer them)
    jobs.json       every job as stored (core/jobstore.py ``JobStore.export``), in creation order
    persistentResources.json   every persistent resource as stored (``JobStore.export_resources``; a
                    snapshot written before they were served has none: restored as none)
    logs/           ``<state_dir>/logs``: the replicas' and the service's log lines, ``replicas.json``
    gcs/            the objects under ``--gcs-root`` (regular files; symlinks and unfinished uploads
                    are left out)

It is written beside its place (``.tmp-*``, removed at the next start when an emulator stopped while
writing one) and renamed into it, so a snapshot is whole or absent; its
size (every file's bytes) is bounded by ``EmulatorConfig.snapshot_max_bytes`` and the number kept by
``MAX_SNAPSHOTS``. Names are 1 to 63 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or
digit: no path separator, no ``..``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_emulator.core.errors import ApiError
from vertex_emulator.core.jobkinds import JOB_KINDS
from vertex_emulator.core.jobstore import disk_full_error
from vertex_emulator.core.jobstore_repair import row_problem
from vertex_emulator.core.resourcerows import RESOURCE_KEYS

__all__ = [
    "MANIFEST",
    "MAX_SNAPSHOTS",
    "SNAPSHOTS_DIR",
    "Snapshot",
    "check_name",
    "clear_tree",
    "copy_tree",
    "delete_snapshot",
    "list_snapshots",
    "read_snapshot",
    "remove_leftovers",
    "write_snapshot",
]

SNAPSHOTS_DIR = "snapshots"
MANIFEST = "snapshot.json"
#: the persistent resources of a snapshot
RESOURCES_FILE = "persistentResources.json"
#: snapshots kept at once: one more is refused until one is deleted
MAX_SNAPSHOTS = 100
VERSION = 1
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
#: files of the local Cloud Storage's uploads in flight (cloud_storage/tree.py ``TMP_PREFIX``)
_UPLOAD_PREFIX = ".avd-upload-"
_ROW_KEYS = ("seq", "name", "kind", "parent", "state", "body")


def check_name(name: object, field: str = "name") -> str:
    """``name`` if it may name a snapshot, else INVALID_ARGUMENT naming ``field`` and the rule."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        shown = repr(name)[:80]
        raise ApiError(
            "INVALID_ARGUMENT",
            f"{field}: must be 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit "
            f"(no path separator) (got {shown})",
        )
    return name


def _root(state_dir: Path) -> Path:
    return Path(state_dir) / SNAPSHOTS_DIR


def _names(state_dir: Path) -> list[str]:
    try:
        entries = os.scandir(_root(state_dir))
    except FileNotFoundError:
        return []
    with entries:
        return sorted(
            e.name for e in entries if _NAME_RE.fullmatch(e.name) and e.is_dir(follow_symlinks=False)
        )


def _not_found(state_dir: Path, name: str) -> ApiError:
    have = ", ".join(_names(state_dir)) or "none"
    return ApiError("NOT_FOUND", f"name: no snapshot named {name!r} (snapshots: {have})")


class _Budget:
    """Bytes written so far, under ``limit``: past it, FAILED_PRECONDITION (nothing is kept)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, size: int) -> None:
        self.used += size
        if self.used > self.limit:
            raise ApiError(
                "FAILED_PRECONDITION",
                f"snapshot: the state holds more than {self.limit} bytes (jobs, logs and objects), the "
                "most a snapshot may hold (snapshot_max_bytes, --snapshot-max-bytes); nothing was written",
            )


def copy_tree(
    src: Path, dst: Path, take: Callable[[int], None] | None = None, skip: Iterable[Path] = ()
) -> int:
    """Copy the regular files and directories under ``src`` to ``dst`` (times kept: an object's
    generation is its file's time), not symlinks, not uploads in flight, not the paths in ``skip``;
    ``take(size)`` is told each file's size first. The number of files copied."""
    skipped = {Path(p) for p in skip}
    count = 0
    dst.mkdir(parents=True, exist_ok=True, mode=0o700)
    for top, dirs, files in os.walk(src):
        here = Path(top)
        target = dst / here.relative_to(src)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink() and here / d not in skipped]
        for d in dirs:
            (target / d).mkdir(exist_ok=True)
        for f in files:
            path = here / f
            if f.startswith(_UPLOAD_PREFIX) or path in skipped or path.is_symlink():
                continue
            with contextlib.suppress(FileNotFoundError):  # a file removed meanwhile is not kept
                if take is not None:
                    take(path.stat().st_size)
                shutil.copy2(path, target / f)
                count += 1
    return count


def clear_tree(root: Path, keep: Callable[[Path], bool] = lambda path: False) -> None:
    """Remove everything under ``root`` (symlinks removed, never followed) but the children ``keep``
    spares; ``root`` itself stays."""
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return
    for entry in entries:
        path = Path(entry.path)
        if keep(path):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


@dataclass(frozen=True)
class Snapshot:
    """A snapshot read back and checked: its manifest, its jobs (``JobStore.export``'s rows) and where
    its logs and objects are."""

    manifest: dict[str, Any]
    rows: list[dict[str, Any]]
    logs: Path
    gcs: Path
    resources: list[dict[str, Any]]


def write_snapshot(
    state_dir: Path,
    name: str,
    *,
    rows: list[dict[str, Any]],
    settings: dict[str, Any],
    stamp: str,
    parts: dict[str, tuple[Path, Iterable[Path]]],
    max_bytes: int,
    replace: bool = False,
    resources: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Write snapshot ``name``: ``rows`` (the jobs), ``settings`` (``capacity`` and ``faults``), and each
    of ``parts`` (``logs``, ``gcs``: a directory and the paths under it to leave out). Its manifest."""
    check_name(name)
    root = _root(state_dir)
    final = root / name
    if final.exists() and not replace:
        raise ApiError(
            "ALREADY_EXISTS", f"name: a snapshot named {name!r} exists (delete it, or send replace: true)"
        )
    if not final.exists() and len(_names(state_dir)) >= MAX_SNAPSHOTS:
        raise ApiError(
            "FAILED_PRECONDITION",
            f"snapshots: {MAX_SNAPSHOTS} are kept already, the most there may be; delete one first",
        )
    root.mkdir(exist_ok=True, mode=0o700)
    work = root / f".tmp-{secrets.token_hex(6)}"
    old: Path | None = None
    try:
        work.mkdir(mode=0o700)
        budget = _Budget(max_bytes)
        kept = json.dumps(resources or []).encode()
        budget.take(len(kept))
        (work / RESOURCES_FILE).write_bytes(kept)
        manifest = _fill(work, name, rows, settings, stamp, parts, budget)
        if final.exists():
            old = root / f".tmp-{secrets.token_hex(6)}"
            final.rename(old)
        try:
            work.rename(final)
        except OSError:
            if old is not None:  # the snapshot replaced stays
                old.rename(final)
                old = None
            raise
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise disk_full_error(Path(state_dir), exc) from exc
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)  # renamed into place already, unless it failed
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return _summary(manifest)


def _fill(
    work: Path,
    name: str,
    rows: list[dict[str, Any]],
    settings: dict[str, Any],
    stamp: str,
    parts: dict[str, tuple[Path, Iterable[Path]]],
    budget: _Budget,
) -> dict[str, Any]:
    jobs = json.dumps(rows).encode()
    budget.take(len(jobs))
    (work / "jobs.json").write_bytes(jobs)
    counts = {part: copy_tree(src, work / part, budget.take, skip) for part, (src, skip) in parts.items()}
    manifest = {
        "version": VERSION,
        "name": name,
        "createTime": stamp,
        "bytes": budget.used,
        "jobs": len(rows),
        "logFiles": counts.get("logs", 0),
        "objects": counts.get("gcs", 0),
        **settings,
    }
    (work / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _summary(manifest: dict[str, Any]) -> dict[str, Any]:
    keys = ("name", "createTime", "bytes", "jobs", "logFiles", "objects")
    return {key: manifest.get(key) for key in keys}


def remove_leftovers(state_dir: Path) -> None:
    """Remove what an emulator stopped while writing or deleting a snapshot left (``.tmp-*``)."""
    for path in _root(state_dir).glob(".tmp-*"):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


def list_snapshots(state_dir: Path) -> list[dict[str, Any]]:
    """Every snapshot's summary (name, createTime, bytes, jobs, logFiles, objects), by name."""
    out = []
    for name in _names(state_dir):
        try:
            manifest = json.loads((_root(state_dir) / name / MANIFEST).read_text())
        except (OSError, ValueError):
            out.append({"name": name, "damaged": "its snapshot.json cannot be read"})
            continue
        out.append(_summary(manifest) if isinstance(manifest, dict) else {"name": name, "damaged": "bad"})
    return out


def delete_snapshot(state_dir: Path, name: str) -> None:
    """Delete snapshot ``name`` (NOT_FOUND naming the snapshots there are when there is none)."""
    check_name(name)
    path = _root(state_dir) / name
    if not path.is_dir() or path.is_symlink():
        raise _not_found(state_dir, name)
    doomed = _root(state_dir) / f".tmp-{secrets.token_hex(6)}"
    path.rename(doomed)  # gone from the list at once, removed after
    shutil.rmtree(doomed, ignore_errors=True)


def _damaged(name: str, why: str) -> ApiError:
    return ApiError("FAILED_PRECONDITION", f"snapshot {name!r} is damaged: {why}; nothing was changed")


def _check_rows(name: str, rows: Any) -> list[dict[str, Any]]:
    if not isinstance(rows, list):
        raise _damaged(name, "jobs.json is not a list")
    seen: set[Any] = set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) != set(_ROW_KEYS):
            raise _damaged(name, f"jobs.json[{i}] is not a job row ({', '.join(_ROW_KEYS)})")
        problem = row_problem(row["name"], row["body"])
        if problem is None and row["kind"] not in JOB_KINDS:
            problem = f"kind {row['kind']!r} is not one of {', '.join(JOB_KINDS)}"
        if problem is None and (not isinstance(row["seq"], int) or row["seq"] in seen):
            problem = "seq is not a unique integer"
        if problem is not None:
            raise _damaged(name, f"jobs.json[{i}]: {problem}")
        seen.add(row["seq"])
    return rows


def read_snapshot(state_dir: Path, name: str) -> Snapshot:
    """Snapshot ``name``, read and checked before anything changes: NOT_FOUND, or FAILED_PRECONDITION
    naming what is damaged."""
    check_name(name)
    path = _root(state_dir) / name
    if not path.is_dir() or path.is_symlink():
        raise _not_found(state_dir, name)
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        rows = json.loads((path / "jobs.json").read_text())
    except OSError as exc:
        raise _damaged(name, f"{exc.strerror or exc}: {Path(exc.filename or '').name}") from None
    except ValueError as exc:
        raise _damaged(name, f"not JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("version") != VERSION:
        raise _damaged(name, f"snapshot.json is not a version {VERSION} manifest")
    for part in ("capacity", "faults"):
        if not isinstance(manifest.get(part), dict):
            raise _damaged(name, f"snapshot.json has no {part} settings")
    return Snapshot(manifest, _check_rows(name, rows), path / "logs", path / "gcs", _resources(name, path))


def _resources(name: str, path: Path) -> list[dict[str, Any]]:
    """The snapshot's persistent resources, checked (none in a snapshot written before they were kept)."""
    try:
        rows = json.loads((path / RESOURCES_FILE).read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise _damaged(name, f"{RESOURCES_FILE} cannot be read ({exc})") from None
    if not isinstance(rows, list):
        raise _damaged(name, f"{RESOURCES_FILE} is not a list")
    for i, row in enumerate(rows):
        problem = None
        if not isinstance(row, dict) or set(row) != set(RESOURCE_KEYS):
            problem = f"not a resource row ({', '.join(RESOURCE_KEYS)})"
        else:
            problem = row_problem(row["name"], row["body"])
        if problem is not None:
            raise _damaged(name, f"{RESOURCES_FILE}[{i}]: {problem}")
    return rows
