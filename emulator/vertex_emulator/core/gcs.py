"""``gs://`` URIs on one machine: a local directory (``--gcs-root``) stands for Cloud Storage.

``gs://bucket/a/b`` is ``<gcs_root>/bucket/a/b``. A URI that is not ``gs://`` is taken as a local
path as it is (handy for tests and for users who point ``base_output_directory`` at a directory).

``to_local_path`` is the one mapping from a ``gs://`` URI to a local path, and it never returns
a path outside ``gcs_root``: it refuses a bucket that is not a bucket name, empty segments (``//``,
which would otherwise restart the path at the filesystem root), ``.`` and ``..`` segments, NUL
characters, and, last, any path whose resolved form (symlinks followed) leaves the resolved
``gcs_root``. Percent signs are literal, as in Cloud Storage object names: ``%2e%2e`` is a directory
named ``%2e%2e``, never ``..``. ``check_request_uris`` applies the same rules, with no
filesystem access, to every ``gs://`` URI in a Create request, so a bad URI is refused at Create.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "GCS_MOUNTED_NOTE",
    "GCS_NOTE",
    "GCS_NOTES",
    "check_request_uris",
    "gcs_parts",
    "is_gcs_uri",
    "join_uri",
    "to_local_path",
]

#: the line the emulator writes first in a replica's log when the replica has no /gcs/: Vertex AI mounts
#: buckets there (Cloud Storage FUSE); here the host gave no mount namespace, or ``gcs_mount`` is off.
GCS_NOTE = (
    "---- emulator: /gcs/ (Vertex AI's Cloud Storage FUSE mount) is not available locally; "
    "use gs:// URIs with google-cloud-storage or gcsfs (STORAGE_EMULATOR_HOST) ----"
)
#: the line it writes instead when the replica has /gcs/ (runtime/gcs_mount.py)
GCS_MOUNTED_NOTE = (
    "---- emulator: /gcs/ (Vertex AI's Cloud Storage FUSE mount) is the emulator's local gs:// root "
    "(--gcs-root): /gcs/<bucket>/<path> is gs://<bucket>/<path> ----"
)
#: either line: not training output, so log tails and the Logging API skip it
GCS_NOTES = (GCS_NOTE, GCS_MOUNTED_NOTE)

_PREFIX = "gs://"
#: Cloud Storage bucket names: lower-case letters, digits, ``-``, ``_`` and ``.``, starting and
#: ending with a letter or digit (the emulator does not enforce the 3-character minimum).
_BUCKET_RE = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,220}[a-z0-9])?")


def is_gcs_uri(uri: str) -> bool:
    return uri.startswith(_PREFIX)


def gcs_parts(uri: str, *, field: str = "uri") -> tuple[str, tuple[str, ...]]:
    """The bucket and object path segments of a ``gs://`` URI; ValueError naming ``field`` if unsafe.

    A trailing ``/`` (a "directory" URI) is allowed; every other segment must be non-empty and not
    ``.`` or ``..``.
    """
    if not is_gcs_uri(uri):
        raise ValueError(f"{field}: not a gs:// URI (got {uri!r})")
    if "\x00" in uri:
        raise ValueError(f"{field}: a gs:// URI must not contain a NUL character (got {uri!r})")
    bucket, slash, obj = uri[len(_PREFIX) :].partition("/")
    if not bucket:
        raise ValueError(f"{field}: a gs:// URI needs a bucket (got {uri!r})")
    if not _BUCKET_RE.fullmatch(bucket):
        raise ValueError(
            f"{field}: {bucket!r} is not a bucket name (lower-case letters, digits, '-', '_' and '.', "
            f"starting and ending with a letter or digit; got {uri!r})"
        )
    segments = obj.split("/") if obj else []
    if segments and segments[-1] == "":
        segments.pop()  # gs://bucket/dir/ names the same place as gs://bucket/dir
    for segment in segments:
        if segment == "":
            raise ValueError(f"{field}: empty path segment ('//') in a gs:// URI (got {uri!r})")
        if segment in (".", ".."):
            raise ValueError(f"{field}: '{segment}' is not allowed as a gs:// path segment (got {uri!r})")
    return bucket, tuple(segments)


def to_local_path(uri: str, gcs_root: Path, *, field: str = "uri") -> Path:
    """The local file or directory standing for ``uri``: always inside ``gcs_root`` for ``gs://``.

    Raises ValueError naming ``field`` when the URI breaks a rule of ``gcs_parts`` or, through
    a symlink, resolves outside ``gcs_root``.
    """
    if not is_gcs_uri(uri):
        if not uri:
            raise ValueError(f"{field}: must not be empty")
        return Path(uri)
    bucket, segments = gcs_parts(uri, field=field)
    path = Path(gcs_root, bucket, *segments)
    root = Path(gcs_root).resolve()
    if not path.resolve().is_relative_to(root):
        raise ValueError(f"{field}: {uri!r} resolves outside the emulator's gs:// directory (a symlink)")
    return path


def _gcs_strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        if is_gcs_uri(value):
            yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _gcs_strings(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _gcs_strings(item, f"{where}[{index}]")


def check_request_uris(body: dict[str, Any]) -> None:
    """Check every ``gs://`` string of a Create body (v1 JSON) with ``gcs_parts``.

    Raises ValueError naming the field path (``jobSpec.baseOutputDirectory.outputUriPrefix``,
    ``jobSpec.workerPoolSpecs[0].pythonPackageSpec.packageUris[1]``...) and the rule.
    """
    for where, uri in _gcs_strings(body, ""):
        gcs_parts(uri, field=where)


def join_uri(base: str, *parts: str, trailing_slash: bool = False) -> str:
    """Join path segments onto a URI or path with single slashes: ``join_uri("gs://b/o/", "model")``."""
    out = base.rstrip("/")
    for part in parts:
        out = f"{out}/{part.strip('/')}"
    return out + "/" if trailing_slash else out
