"""Reading and writing the trainers' files at ``gs://`` URIs or local paths, the same way everywhere.

A ``gs://bucket/obj`` URI goes through the ``google-cloud-storage`` client: on Vertex AI with the
job's service account; under the local emulator with no credentials, to the Cloud Storage API the
emulator gives every replica in ``STORAGE_EMULATOR_HOST``. The trainer code is the same in both: no
local-path special case. One exception, for code that runs *outside* a job (an Airflow task such as
the examples' data prep): when ``GCS_MOUNT_ROOT`` is set, ``gs://bucket/obj`` is the file
``$GCS_MOUNT_ROOT/bucket/obj`` (a Cloud Storage FUSE mount, or the emulator's ``--gcs-root``).
Anything else is a local path. The client is imported only when a ``gs://`` URI is used.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["GcsError", "exists", "fetch_dir", "join", "list_dir", "read_bytes", "read_text", "write_bytes",
           "write_json"]  # fmt: skip

_GCS = "gs://"


class GcsError(ValueError):
    """A URI the trainers cannot use (no bucket, a '..' segment)."""


def join(base: str, *parts: str) -> str:
    """``join("gs://b/run/model/", "model.json")`` -> ``gs://b/run/model/model.json`` (paths too)."""
    out = str(base).rstrip("/")
    for part in parts:
        out = f"{out}/{part.strip('/')}"
    return out


def _split(uri: str) -> tuple[str, str]:
    bucket, _, name = uri[len(_GCS) :].partition("/")
    if not bucket:
        raise GcsError(f"{uri!r}: a gs:// URI needs a bucket")
    if ".." in name.split("/"):
        raise GcsError(f"{uri!r}: '..' is not allowed in a gs:// URI")
    return bucket, name


def _local(uri: str) -> Path | None:
    """The file standing for ``uri`` (a local path, or gs:// under ``GCS_MOUNT_ROOT``); None: the client."""
    if not uri.startswith(_GCS):
        return Path(uri)
    bucket, name = _split(uri)
    mount = os.environ.get("GCS_MOUNT_ROOT")
    if not mount:
        return None
    return Path(mount, bucket, *[p for p in name.split("/") if p])


@cache
def _client() -> Any:
    from google.cloud import storage

    return storage.Client()


def _blob(uri: str) -> Any:
    bucket, name = _split(uri)
    if not name or name.endswith("/"):
        raise GcsError(f"{uri!r}: names a directory, not an object")
    return _client().bucket(bucket).blob(name)


def write_bytes(uri: str, data: bytes) -> None:
    """Write one file or object whole (a local file is replaced atomically: no reader sees half of it)."""
    local = _local(uri)
    if local is None:
        _blob(uri).upload_from_string(data)
        return
    local.parent.mkdir(parents=True, exist_ok=True)
    tmp = local.with_name(f".{local.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(local)


def write_json(uri: str, data: Any) -> None:
    write_bytes(uri, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


def read_bytes(uri: str) -> bytes:
    local = _local(uri)
    if local is None:
        return bytes(_blob(uri).download_as_bytes())
    return local.read_bytes()


def read_text(uri: str) -> str:
    return read_bytes(uri).decode()


def exists(uri: str) -> bool:
    local = _local(uri)
    if local is None:
        return bool(_blob(uri).exists())
    return local.is_file()


def list_dir(uri: str) -> list[str]:
    """Names of the files (objects) directly under ``uri``, sorted; ``[]`` when there is none."""
    local = _local(uri)
    if local is not None:
        return sorted(p.name for p in local.iterdir() if p.is_file()) if local.is_dir() else []
    bucket, name = _split(uri)
    prefix = f"{name.rstrip('/')}/" if name.strip("/") else ""
    blobs = _client().list_blobs(bucket, prefix=prefix, delimiter="/")
    return sorted(str(b.name)[len(prefix) :] for b in blobs if str(b.name) != prefix)


def fetch_dir(uri: str, dest: Path) -> Path:
    """A local directory holding the files directly under ``uri``: ``uri`` itself when it is local,
    else a copy downloaded to ``dest``."""
    local = _local(uri)
    if local is not None:
        return local
    dest.mkdir(parents=True, exist_ok=True)
    for name in list_dir(uri):
        (dest / name).write_bytes(read_bytes(join(uri, name)))
    return dest
