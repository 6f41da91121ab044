"""The local Cloud Storage's objects: buckets and objects as the directory tree under ``--gcs-root``.

Object ``gs://b/x/y`` is the file ``<root>/b/x/y`` (``gcs.to_local_path``, the emulator's one mapping);
a bucket is a directory. This module holds what the JSON API (api.py) does with them, apart from
HTTP: names to paths (and the names the tree cannot hold), the bucket and object resources,
generations and their preconditions, atomic writes and copies (listing: listing.py). Every refusal
is a ``StorageError`` carrying the HTTP status and the API's error reason (core/errors.py: api_core's
class of that status, as the stock storage client raises).

An object's generation is its file's modification time in nanoseconds, made to grow with every
write of a name; only the live generation exists (a request for another one is 404). Metadata
beyond name, size, hashes and times is not stored (``contentType`` is guessed from the name).
Writes go to a temporary file beside the object (``.avd-upload-*``, never listed nor accepted as a
name) and are renamed into place, so a reader never sees half an object.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import mimetypes
import os
import secrets
import shutil
import stat
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

from vertex_emulator.core.errors import StorageError
from vertex_emulator.core.gcs import to_local_path
from vertex_emulator.core.timefmt import format_rfc3339

__all__ = [
    "CHUNK",
    "MAX_NAME_BYTES",
    "MAX_SEGMENT_BYTES",
    "TMP_PREFIX",
    "StorageError",
    "bucket_dir",
    "bucket_resource",
    "byte_offset",
    "commit",
    "copy_object",
    "existing",
    "generation",
    "hashes",
    "live_object",
    "object_path",
    "object_resource",
    "precondition",
    "prepare_target",
    "servable",
    "temp_beside",
]

#: bytes read or written at a time
CHUNK = 1024 * 1024
TMP_PREFIX = ".avd-upload-"
#: the longest object name, UTF-8 bytes (Cloud Storage, "Object naming requirements").
MAX_NAME_BYTES = 1024
#: the longest part of a name between slashes: a file name here (the emulator's own limit).
MAX_SEGMENT_BYTES = 255


def _rfc3339(ts: float) -> str:
    return format_rfc3339(datetime.fromtimestamp(ts, tz=timezone.utc))


#: ``(md5Hash, crc32c)`` per file, keyed by what changes when the file does (device, inode, size,
#: modification and change times): a metadata GET or a List hashed the whole object every time
#: (1 GiB: 8.6 s per call). Writes through the API rename a new file into place (a new inode).
_HASHES: dict[str, tuple[tuple[int, ...], tuple[str, str]]] = {}
_HASHES_LOCK = threading.Lock()
_HASHES_MAX = 4096


def hashes(path: Path) -> tuple[str, str]:
    """``(md5Hash, crc32c)`` of a file, base64 as the JSON API writes them (cached per file version)."""
    import google_crc32c

    st = os.stat(path)
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _HASHES_LOCK:
        hit = _HASHES.get(str(path))
    if hit is not None and hit[0] == key:
        return hit[1]
    crc32c: Any = google_crc32c  # the package has no type hints
    md5 = hashlib.md5(usedforsecurity=False)
    crc = crc32c.Checksum()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            md5.update(block)
            crc.update(block)
    out = base64.b64encode(md5.digest()).decode(), base64.b64encode(crc.digest()).decode()
    with _HASHES_LOCK:
        if len(_HASHES) >= _HASHES_MAX:
            _HASHES.clear()
        _HASHES[str(path)] = (key, out)
    return out


def servable(root: Path, path: Path) -> bool:
    """Whether ``path`` can be served as an object: a regular file (not a FIFO, socket or device,
    which would block or never end) that resolves inside ``root`` (a symlink to a file outside must
    not show that file's size and hashes)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode) and path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a dangling or looping symlink
        return False


def byte_offset(digits: str) -> int:
    """A byte offset of a ``Range`` or ``Content-Range``: past 2**62 (and past what ``int`` will read
    from 4,300 digits, a 500) it stands for "beyond any object"."""
    return int(digits) if len(digits) <= 18 else 1 << 62


def temp_beside(target: Path) -> Path:
    """A new temporary file name in ``target``'s directory (renamed onto it once complete)."""
    return target.parent / f"{TMP_PREFIX}{secrets.token_hex(8)}"


# -- names to paths ---------------------------------------------------------------------------------


def bucket_dir(root: Path, bucket: str) -> Path:
    try:
        path = to_local_path(f"gs://{bucket}", root, field="bucket")
    except ValueError as exc:
        raise StorageError(400, "invalid", str(exc)) from None
    if not path.is_dir():
        raise StorageError(404, "notFound", f"The specified bucket does not exist: {bucket}")
    return path


def object_path(root: Path, bucket: str, name: str) -> Path:
    if not name:
        raise StorageError(400, "required", "object name: required")
    if name.endswith("/"):
        raise StorageError(
            400,
            "invalid",
            f"object name {name!r}: names ending in '/' (folder placeholders) cannot be stored in the "
            "emulator's directory tree",
        )
    if "\r" in name or "\n" in name:
        # "Object names cannot contain Carriage Return or Line Feed characters" (Cloud Storage,
        # "Object naming requirements")
        raise StorageError(
            400, "invalid", f"object name {name!r}: must not contain a carriage return or line feed"
        )
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        # "Object names ... of length 1-1024 bytes when UTF-8 encoded" (same page)
        raise StorageError(400, "invalid", f"object name: longer than {MAX_NAME_BYTES} bytes (UTF-8)")
    if any(len(part.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES for part in name.split("/")):
        raise StorageError(
            400,
            "invalid",
            f"object name: a '/'-separated part longer than {MAX_SEGMENT_BYTES} bytes cannot be a file name "
            "in the emulator's directory tree (Cloud Storage allows it)",
        )
    if name.split("/")[-1].startswith(TMP_PREFIX):
        raise StorageError(400, "invalid", f"object name {name!r}: {TMP_PREFIX}* is reserved by the emulator")
    bucket_dir(root, bucket)
    try:
        return to_local_path(f"gs://{bucket}/{name}", root, field="object name")
    except ValueError as exc:
        raise StorageError(400, "invalid", str(exc)) from None


def existing(root: Path, bucket: str, name: str) -> Path:
    path = object_path(root, bucket, name)
    if not servable(root, path):
        raise StorageError(404, "notFound", f"No such object: {bucket}/{name}")
    return path


def prepare_target(root: Path, bucket: str, name: str) -> Path:
    """The path object ``name`` is written to, its directory created; refused when the tree cannot
    hold it (a directory there, or a file where a directory of its path must be)."""
    path = object_path(root, bucket, name)
    if path.is_dir():
        raise StorageError(
            400, "invalid", f"object name {name!r}: the emulator holds objects below it ({name}/...)"
        )
    for parent in path.relative_to(root).parents:
        if (root / parent).is_file():
            raise StorageError(
                400,
                "invalid",
                f"object name {name!r}: the object {parent.as_posix()} is stored as a file",
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


# -- resources --------------------------------------------------------------------------------------


def bucket_resource(base: str, bucket: str, path: Path) -> dict[str, Any]:
    created = _rfc3339(path.stat().st_mtime)
    return {
        "kind": "storage#bucket",
        "id": bucket,
        "name": bucket,
        "selfLink": f"{base}/storage/v1/b/{bucket}",
        "location": "US",
        "storageClass": "STANDARD",
        "timeCreated": created,
        "updated": created,
        "metageneration": "1",
    }


def object_resource(base: str, bucket: str, name: str, path: Path) -> dict[str, Any]:
    """The ``storage#object`` of the file ``path`` (``base``: the API's URL, for the links)."""
    st = path.stat()
    md5, crc = hashes(path)
    quoted = quote(name, safe="")
    return {
        "kind": "storage#object",
        "id": f"{bucket}/{name}/{st.st_mtime_ns}",
        "name": name,
        "bucket": bucket,
        "generation": str(st.st_mtime_ns),
        "metageneration": "1",
        "contentType": mimetypes.guess_type(name)[0] or "application/octet-stream",
        "storageClass": "STANDARD",
        "size": str(st.st_size),
        "md5Hash": md5,
        "crc32c": crc,
        "etag": md5,
        "timeCreated": _rfc3339(st.st_mtime),
        "updated": _rfc3339(st.st_mtime),
        "selfLink": f"{base}/storage/v1/b/{bucket}/o/{quoted}",
        "mediaLink": f"{base}/download/storage/v1/b/{bucket}/o/{quoted}?alt=media",
    }


# -- writes -----------------------------------------------------------------------------------------


def generation(path: Path) -> str:
    """The object's generation: its file's modification time in nanoseconds (``commit`` and
    ``copy_object`` make it grow with every write of a name)."""
    return str(path.stat().st_mtime_ns)


def live_object(root: Path, bucket: str, name: str, query: dict[str, str]) -> Path:
    """The object a get, download or delete names, after its ``generation`` and ``ifGenerationMatch``.

    Only the live generation is kept here (no versioning), so a ``generation`` that is not the live
    one is 404, as Cloud Storage answers for a generation it does not have ("generation: If present,
    selects a specific revision of this object", ``objects.get`` / ``objects.delete`` reference)."""
    path = existing(root, bucket, name)
    wanted = query.get("generation")
    if wanted and wanted != generation(path):
        raise StorageError(404, "notFound", f"No such object: {bucket}/{name}#{wanted}")
    precondition(path, query.get("ifGenerationMatch"))
    return path


def _after_live(tmp: Path, target: Path, now_ns: int | None = None) -> None:
    """Give ``tmp`` a modification time past ``target``'s, so the name's next generation is a new
    one even when two writes fall in one tick of the filesystem's clock; with ``now_ns`` (the service's
    wall time, core/clock.py) that time first: a scenario's objects are written at the scenario's times,
    as its jobs and log entries are."""
    if now_ns is not None:
        os.utime(tmp, ns=(tmp.stat().st_atime_ns, now_ns))
    try:
        live = target.stat().st_mtime_ns
    except FileNotFoundError:
        return
    st = tmp.stat()
    if st.st_mtime_ns <= live:
        os.utime(tmp, ns=(st.st_atime_ns, live + 1))


def precondition(path: Path, if_generation_match: str | None) -> None:
    """``ifGenerationMatch``: the object's generation, ``0`` meaning "does not exist yet"."""
    if if_generation_match is None or if_generation_match == "":
        return
    current = str(path.stat().st_mtime_ns) if path.is_file() else "0"
    if current != if_generation_match:
        raise StorageError(
            412,
            "conditionNotMet",
            f"At least one of the pre-conditions you specified did not hold (ifGenerationMatch="
            f"{if_generation_match}, generation {current}).",
        )


def commit(tmp: Path, target: Path, if_generation_match: str | None, now_ns: int | None = None) -> None:
    """Rename the complete temporary file onto the object if the precondition holds, written at
    ``now_ns`` (default: the file's own time); the temporary file is gone either way."""
    try:
        precondition(target, if_generation_match)
        _after_live(tmp, target, now_ns)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def copy_object(
    root: Path,
    base: str,
    source: tuple[str, str],
    dest: tuple[str, str],
    query: dict[str, str],
) -> dict[str, Any]:
    """Copy object ``source`` (bucket, name) onto ``dest``; the new object's resource. The
    destination's ``ifGenerationMatch`` and the source's ``ifSourceGenerationMatch`` and
    ``sourceGeneration`` are honoured."""
    bucket, name = source
    path = existing(root, bucket, name)
    live = generation(path)
    wanted = query.get("sourceGeneration")
    if wanted and wanted != live:
        raise StorageError(404, "notFound", f"No such object: {bucket}/{name}#{wanted}")
    wanted = query.get("ifSourceGenerationMatch")
    if wanted and wanted != live:
        raise StorageError(
            412,
            "conditionNotMet",
            f"At least one of the pre-conditions you specified did not hold (ifSourceGenerationMatch="
            f"{wanted}, generation {live}).",
        )
    target = prepare_target(root, *dest)
    tmp = temp_beside(target)
    try:
        shutil.copyfile(path, tmp)
        precondition(target, query.get("ifGenerationMatch"))
        _after_live(tmp, target)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return object_resource(base, *dest, target)
