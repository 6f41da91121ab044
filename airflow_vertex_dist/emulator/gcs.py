"""``gs://`` URIs on one machine: a local directory stands for Cloud Storage.

``gs://bucket/a/b`` is ``<gcs_root>/bucket/a/b``. A URI that is not ``gs://`` is taken as a local
path as it is (handy for tests and for users who point ``base_output_directory`` at a directory).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

__all__ = ["is_gcs_uri", "join_uri", "to_local_path"]

_PREFIX = "gs://"


def is_gcs_uri(uri: str) -> bool:
    return uri.startswith(_PREFIX)


def to_local_path(uri: str, gcs_root: Path, *, field: str = "uri") -> Path:
    """The local file or directory standing for ``uri``.

    Raises ValueError naming ``field`` when the URI has no bucket or climbs out of its bucket.
    """
    if not is_gcs_uri(uri):
        if not uri:
            raise ValueError(f"{field}: must not be empty")
        return Path(uri)
    rest = uri[len(_PREFIX) :]
    bucket, _, obj = rest.partition("/")
    if not bucket:
        raise ValueError(f"{field}: a gs:// URI needs a bucket (got {uri!r})")
    parts = PurePosixPath(obj).parts if obj else ()
    if ".." in parts or bucket in (".", ".."):
        raise ValueError(f"{field}: '..' is not allowed in a gs:// URI (got {uri!r})")
    return Path(gcs_root, bucket, *parts)


def join_uri(base: str, *parts: str, trailing_slash: bool = False) -> str:
    """Join path segments onto a URI or path with single slashes: ``join_uri("gs://b/o/", "model")``."""
    out = base.rstrip("/")
    for part in parts:
        out = f"{out}/{part.strip('/')}"
    return out + "/" if trailing_slash else out
