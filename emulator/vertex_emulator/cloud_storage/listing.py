"""``objects.list`` of the local Cloud Storage: the objects under a bucket's directory, by name.

Names come in lexicographic order, as Cloud Storage lists them, with ``prefix``, ``delimiter``,
``matchGlob`` (match_glob.py), ``maxResults``, ``pageToken``, ``startOffset`` and ``endOffset``;
temporary files of writes in progress (``tree.TMP_PREFIX``) and files that cannot be served are never
listed. Every refusal is a ``StorageError`` (tree.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vertex_emulator.cloud_storage.match_glob import Glob, GlobError
from vertex_emulator.cloud_storage.tree import TMP_PREFIX, StorageError, bucket_dir, object_resource, servable

__all__ = ["list_objects"]


def _glob(query: dict[str, str], delimiter: str) -> Glob | None:
    """The request's ``matchGlob``, compiled; None without one. "delimiter must be either excluded or
    set to / in requests that use the matchGlob parameter" (``objects.list`` reference)."""
    pattern = query.get("matchGlob", "")
    if not pattern:
        return None
    if delimiter not in ("", "/"):
        raise StorageError(
            400, "invalid", f"delimiter: must be absent or '/' with matchGlob (got {delimiter!r})"
        )
    try:
        return Glob(pattern)
    except GlobError as exc:
        raise StorageError(400, "invalid", str(exc)) from None


def list_objects(root: Path, base: str, bucket: str, query: dict[str, str]) -> dict[str, Any]:
    """``objects.list``: ``prefix``, ``delimiter``, ``matchGlob``, ``maxResults``, ``pageToken``,
    ``startOffset``, ``endOffset``; names in lexicographic order, as Cloud Storage lists them.

    ``matchGlob`` filters "objects and prefixes" (its reference): an object is listed when its whole
    name matches, a ``prefixes[]`` entry when the prefix itself (``a/b/``) does."""
    top = bucket_dir(root, bucket)
    prefix = query.get("prefix", "")
    delimiter = query.get("delimiter", "")
    glob = _glob(query, delimiter)
    start = query.get("startOffset", "")
    end = query.get("endOffset", "")
    token = query.get("pageToken", "")
    try:
        limit = max(1, min(int(query.get("maxResults") or 1000), 1000))
    except ValueError:
        raise StorageError(
            400, "invalid", f"maxResults: not a number ({query.get('maxResults')!r})"
        ) from None
    names: list[str] = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        rel = os.path.relpath(dirpath, top)
        for filename in filenames:
            if filename.startswith(TMP_PREFIX):
                continue
            name = filename if rel == "." else f"{rel.replace(os.sep, '/')}/{filename}"
            if name.startswith(prefix) and servable(root, top / name):
                names.append(name)
    names.sort()
    items: list[dict[str, Any]] = []
    prefixes: list[str] = []
    seen: set[str] = set()
    next_token = last = ""
    for name in names:
        if (start and name < start) or (end and name >= end) or (token and name <= token):
            continue
        cut = name.find(delimiter, len(prefix)) if delimiter else -1
        entry = name[: cut + len(delimiter)] if cut != -1 else name
        if entry in seen or (glob is not None and not glob.matches(entry)):
            last = name  # consumed: a later page starts after it
            continue
        if len(items) + len(prefixes) >= limit:
            next_token = last
            break
        last = name
        if cut != -1:
            seen.add(entry)
            prefixes.append(entry)
        else:
            items.append(object_resource(base, bucket, name, top / name))
    out: dict[str, Any] = {"kind": "storage#objects"}
    if items:
        out["items"] = items
    if prefixes:
        out["prefixes"] = prefixes
    if next_token:
        out["nextPageToken"] = next_token
    return out
