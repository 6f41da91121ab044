"""What a request to the local Cloud Storage JSON API asks for, read from its method, path and query
alone (no file is touched here): the ``Route`` of every path api.py serves, and the bytes a
``Range`` header selects. Every refusal is a ``StorageError`` (tree.py) with the API's status and
reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from vertex_emulator.cloud_storage.tree import StorageError, byte_offset

__all__ = ["Route", "byte_range", "route"]

_RANGE_RE = re.compile(r"bytes=(\d*)-(\d*)")


@dataclass(frozen=True)
class Route:
    """One call of the API: ``action`` names it (``insert_bucket``, ``list_buckets``, ``get_bucket``,
    ``delete_bucket``, ``resume``,
    ``upload``, ``list``, ``copy``, ``get``, ``download``, ``delete``, ``patch``)."""

    action: str
    bucket: str = ""
    name: str = ""
    #: ``copy`` only: ``copyTo`` or ``rewriteTo``, and the destination bucket and object
    verb: str = ""
    dest_bucket: str = ""
    dest_name: str = ""


def route(method: str, path: str, query: dict[str, str]) -> Route:
    """The ``Route`` of ``method path``; ``StorageError`` (404, 405 or 400) for what is not served."""
    parts = path.split("/")
    # ["", "storage", "v1", "b", bucket, "o", object...]; upload/download put a word first
    prefix = ""
    if len(parts) > 1 and parts[1] in ("upload", "download"):
        prefix = parts[1]
        parts = [""] + parts[2:]
    if parts[1:4] != ["storage", "v1", "b"]:
        raise StorageError(404, "notFound", f"{path}: not a Cloud Storage JSON API path this emulator serves")
    rest = parts[4:]
    if not rest or rest == [""]:
        if method == "POST" and not prefix:
            return Route("insert_bucket")
        if method in ("GET", "HEAD") and not prefix:
            return Route("list_buckets")
        raise StorageError(405, "invalid", f"{method} {path}: not supported on the bucket collection")
    bucket = unquote(rest[0])
    if len(rest) == 1:
        if method in ("GET", "HEAD") and not prefix:
            return Route("get_bucket", bucket)
        if method == "DELETE" and not prefix:
            return Route("delete_bucket", bucket)
        raise StorageError(405, "invalid", f"{method} {path}: not supported on a bucket")
    if rest[1] != "o":
        raise StorageError(404, "notFound", f"{path}: only objects (/o) are served")
    if len(rest) == 2 or (len(rest) == 3 and rest[2] == ""):
        return _objects_route(method, path, query, prefix, bucket)
    return _object_route(method, path, query, prefix, bucket, rest)


def _objects_route(method: str, path: str, query: dict[str, str], prefix: str, bucket: str) -> Route:
    """``/b/<bucket>/o``: uploads and listing."""
    if prefix == "upload" and method in ("POST", "PUT") and "upload_id" in query:
        return Route("resume", bucket)  # a session URI takes PUT (google-cloud-storage) or POST (gcsfs)
    if prefix == "upload" and method == "POST":
        return Route("upload", bucket)
    if method in ("GET", "HEAD") and not prefix:
        return Route("list", bucket)
    raise StorageError(405, "invalid", f"{method} {path}: not supported")


def _object_route(
    method: str, path: str, query: dict[str, str], prefix: str, bucket: str, rest: list[str]
) -> Route:
    """``/b/<bucket>/o/<object>[/copyTo|rewriteTo/...]``: one object."""
    copy = _copy_target(rest) if method == "POST" and not prefix else None
    if copy is not None:
        end, verb, dest_bucket, dest_name = copy
        return Route("copy", bucket, unquote("/".join(rest[2:end])), verb, dest_bucket, dest_name)
    name = unquote("/".join(rest[2:]))
    if method in ("GET", "HEAD"):
        media = query.get("alt") == "media" or prefix == "download"
        return Route("download" if media else "get", bucket, name)
    if method == "DELETE" and not prefix:
        return Route("delete", bucket, name)
    if method == "PATCH" and not prefix:
        return Route("patch", bucket, name)
    raise StorageError(405, "invalid", f"{method} {path}: not supported")


def _copy_target(rest: list[str]) -> tuple[int, str, str, str] | None:
    """``<bucket>/o/<object>/{copyTo|rewriteTo}/b/<bucket>/o/<object>``: (where the source object's
    segments end, the verb, the destination bucket and object), else ``None``."""
    for end in range(3, len(rest) - 4):
        if rest[end] in ("copyTo", "rewriteTo") and rest[end + 1] == "b" and rest[end + 3] == "o":
            return end, rest[end], unquote(rest[end + 2]), unquote("/".join(rest[end + 4 :]))
    return None


def byte_range(spec: str, size: int) -> tuple[int, int]:
    """``(start, stop)`` of the ``Range`` header ``spec`` (``bytes=START-END``, ``bytes=START-`` or
    ``bytes=-SUFFIX``) over an object of ``size`` bytes."""
    match = _RANGE_RE.fullmatch(spec.strip())
    if match is None or (not match[1] and not match[2]):
        raise StorageError(400, "invalid", f"Range: {spec!r} is not 'bytes=START-END'")
    if match[1]:
        start = byte_offset(match[1])
        stop = min(size, byte_offset(match[2]) + 1) if match[2] else size
    else:
        start, stop = max(0, size - byte_offset(match[2])), size
    if start >= size and size > 0:
        raise StorageError(416, "invalid", f"Range: {spec!r} starts past the object's {size} bytes")
    return start, stop
