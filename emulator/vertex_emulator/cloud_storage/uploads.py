"""The local Cloud Storage's upload formats, apart from HTTP: a ``multipart/related`` body's two
parts, and resumable upload sessions.

A resumable session (``uploadType=resumable``) collects its chunks in a temporary file beside the
object (storage_tree.temp_beside) and is renamed onto the object when the last chunk arrives; the
sessions live in memory (a restarted emulator forgets them, and its ``stop`` removes their files).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
from pathlib import Path

from vertex_emulator.cloud_storage.tree import StorageError, temp_beside

__all__ = ["Upload", "UploadSessions", "split_multipart"]

_BOUNDARY_RE = re.compile(r'boundary="?([^";]+)"?')
_PART_SEPARATOR_RE = re.compile(rb"\r?\n\r?\n")


def split_multipart(body: bytes, content_type: str) -> tuple[bytes, bytes]:
    """``(metadata, media)``: the two parts of an ``uploadType=multipart`` body."""
    match = _BOUNDARY_RE.search(content_type)
    if not content_type.startswith("multipart/related") or match is None:
        raise StorageError(400, "invalid", "Content-Type: multipart/related with a boundary is required")
    delim = b"--" + match[1].encode()
    parts = []
    for chunk in body.split(delim)[1:]:
        if chunk.startswith(b"--"):
            break
        # RFC 2046 says CRLF; gcsfs writes bare LF: accept both
        separator = _PART_SEPARATOR_RE.search(chunk)
        if separator is None:
            raise StorageError(400, "invalid", "a multipart part has no header/body separator")
        content = chunk[separator.end() :]
        if content.endswith(b"\r\n"):
            content = content[:-2]
        elif content.endswith(b"\n"):
            content = content[:-1]
        parts.append(content)
    if len(parts) != 2:
        raise StorageError(
            400, "invalid", f"a multipart upload has 2 parts: metadata and media (got {len(parts)})"
        )
    return parts[0], parts[1]


class Upload:
    """A resumable upload session: bytes so far go to a temporary file beside the object."""

    def __init__(self, bucket: str, name: str, target: Path, if_generation_match: str | None) -> None:
        self.bucket = bucket
        self.name = name
        self.target = target
        self.if_generation_match = if_generation_match
        self.tmp = temp_beside(target)
        self.received = 0
        self.lock = threading.Lock()


class UploadSessions:
    """The open resumable uploads, by ``upload_id``."""

    def __init__(self) -> None:
        self._sessions: dict[str, Upload] = {}
        self._lock = threading.Lock()

    def open(self, upload: Upload) -> str:
        """Register ``upload`` (its temporary file created); its new ``upload_id``."""
        upload_id = secrets.token_urlsafe(16)
        upload.tmp.touch()
        with self._lock:
            self._sessions[upload_id] = upload
        return upload_id

    def get(self, upload_id: str) -> Upload | None:
        with self._lock:
            return self._sessions.get(upload_id)

    def close(self, upload_id: str) -> None:
        with self._lock:
            self._sessions.pop(upload_id, None)

    def discard_all(self) -> None:
        """Forget every session and remove its temporary file."""
        with self._lock:
            for upload in self._sessions.values():
                with contextlib.suppress(OSError):
                    upload.tmp.unlink()
            self._sessions.clear()
