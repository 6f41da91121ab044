"""Buckets of the local Cloud Storage JSON API: ``buckets.insert``, ``get``, ``list`` and ``delete`` as
Cloud Storage answers them, each bucket a directory directly under ``--gcs-root``.

* Names (``insert`` only; a directory put there by hand is a bucket as it is): "Bucket naming
  guidelines", https://cloud.google.com/storage/docs/naming-buckets (read 2026-12-06): "Bucket names
  must contain only lowercase letters, numbers, dashes (-), underscores (_), and dots (.)", "must start
  and end with a number or letter", "must contain 3-63 characters. Names containing dots can contain up
  to 222 characters, but each dot-separated component can be no longer than 63 characters", "cannot be
  represented as an IP address in dotted-decimal notation", "cannot begin with the "goog" prefix",
  "cannot contain "google" or close misspellings, such as "g00gle"" (read here as ``google`` with any
  ``o`` written ``0``). An empty dot-separated component (``a..b``) is refused too. A bad name is 400
  ``invalid``, "Invalid bucket name: '<name>'".
* ``insert`` of a bucket that exists: 409 ``conflict``, "Your previous request to create the named
  bucket succeeded and you already own it." (every local bucket is the caller's).
* ``list`` needs ``project`` (400 "Required parameter: project", as the JSON API marks it required); it
  lists the directories under the root whose names ``core/gcs`` takes, sorted, with ``prefix``,
  ``maxResults`` and ``pageToken``; the project is not recorded (one local namespace).
* ``delete``: a missing bucket is 404 "The specified bucket does not exist."; a bucket that holds an
  object (any file or symlink under its directory) is 409 ``conflict`` with the service's text "The
  bucket you tried to delete was not empty." (as quoted in genevieve/leftovers issue 38,
  https://github.com/genevieve/leftovers/issues/38, read 2026-12-06); an empty one (empty directories
  only: Cloud Storage has no directories) is removed, directory by directory, never following a
  symlink. A bucket directory that is itself a symlink is not deleted (400).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from vertex_emulator.cloud_storage.tree import StorageError, bucket_dir, bucket_resource
from vertex_emulator.core.gcs import gcs_parts

__all__ = [
    "MAX_BUCKETS_PAGE",
    "bucket_name_problem",
    "check_new_bucket_name",
    "delete_bucket",
    "list_buckets",
]

#: the most buckets one ``list`` page holds (the JSON API's ``maxResults`` ceiling is 1000)
MAX_BUCKETS_PAGE = 1000
_CHARS_RE = re.compile(r"[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?")
_IPV4_RE = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")


def bucket_name_problem(name: str) -> str | None:
    """Why ``name`` breaks a rule of the naming page (see the module doc), or ``None``."""
    if not _CHARS_RE.fullmatch(name):
        return (
            "only lowercase letters, numbers, '-', '_' and '.', starting and ending with a letter or a number"
        )
    parts = name.split(".")
    if "." in name:
        if len(name) > 222 or any(not part or len(part) > 63 for part in parts):
            return "a dotted name has at most 222 characters, and 1-63 in each dot-separated part"
    if len(name) < 3 or ("." not in name and len(name) > 63):
        return "3-63 characters"
    if _IPV4_RE.fullmatch(name):
        return "not an IP address in dotted-decimal notation"
    if name.startswith("goog"):
        return "must not begin with 'goog'"
    if "google" in name.replace("0", "o"):
        return "must not contain 'google' or a close misspelling"
    return None


def check_new_bucket_name(name: str) -> None:
    """400 ``invalid`` naming the bucket when ``name`` breaks a naming rule."""
    problem = bucket_name_problem(name)
    if problem is not None:
        raise StorageError(400, "invalid", f"Invalid bucket name: {name!r} ({problem})")


def list_buckets(root: Path, base: str, query: dict[str, str]) -> dict[str, Any]:
    """A ``storage#buckets`` page of the buckets (directories) under ``root``."""
    if not query.get("project"):
        raise StorageError(400, "required", "Required parameter: project")
    prefix = query.get("prefix", "")
    token = query.get("pageToken", "")
    try:
        size = min(MAX_BUCKETS_PAGE, max(1, int(query.get("maxResults") or MAX_BUCKETS_PAGE)))
    except ValueError:
        raise StorageError(400, "invalid", "maxResults: not an integer") from None
    names = sorted(
        entry.name
        for entry in os.scandir(root)
        if entry.is_dir(follow_symlinks=False)
        and entry.name.startswith(prefix)
        and entry.name > token
        and _is_bucket_name(entry.name)
    )
    page = names[:size]
    out: dict[str, Any] = {
        "kind": "storage#buckets",
        "items": [bucket_resource(base, name, root / name) for name in page],
    }
    if len(names) > size:
        out["nextPageToken"] = page[-1]
    return out


def _is_bucket_name(name: str) -> bool:
    try:
        gcs_parts(f"gs://{name}")
    except ValueError:
        return False
    return True


def delete_bucket(root: Path, bucket: str) -> None:
    """Remove the empty bucket ``bucket``; 404 when it is missing, 409 when it holds an object."""
    path = bucket_dir(root, bucket)
    if path.is_symlink():
        raise StorageError(400, "invalid", f"{bucket}: the bucket's directory is a symlink; not deleted")
    dirs: list[str] = []
    for top, subdirs, files in os.walk(path, followlinks=False):
        links = [name for name in subdirs if os.path.islink(os.path.join(top, name))]
        if files or links:
            raise StorageError(409, "conflict", "The bucket you tried to delete was not empty.")
        dirs.append(top)
    for top in reversed(dirs):
        try:
            os.rmdir(top)
        except OSError as exc:  # an object written meanwhile
            raise StorageError(409, "conflict", "The bucket you tried to delete was not empty.") from exc
