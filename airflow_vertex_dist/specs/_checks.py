"""Field rules shared by several spec modules."""

from __future__ import annotations

from airflow_vertex_dist.specs._base import fail

__all__ = ["INT64_MAX", "check_id", "is_gs_uri", "nonblank"]


def nonblank(field: str, value: str) -> str:
    """A name-like string: not empty, no white space anywhere."""
    if not value.strip():
        fail(f"{field}: must not be empty; give it a value")
    if value != value.strip() or any(c.isspace() for c in value):
        fail(f"{field}: must not contain whitespace (got {value!r}); remove the spaces")
    return value


#: The largest int64 (proto ``int64`` fields).
INT64_MAX = 2**63 - 1


def check_id(field: str, value: str) -> str:
    """A metric or parameter id: not empty, no white space, at most 128 characters."""
    if not value or any(c.isspace() for c in value):
        fail(
            f"{field}: must be non-empty and contain no whitespace (got {value!r}); use an id such as "
            "'val_loss'"
        )
    if len(value) > 128:
        fail(f"{field}: at most 128 characters (got {len(value)}); shorten it")
    return value


def is_gs_uri(value: str) -> bool:
    """``gs://bucket/...`` with a bucket name: object names may hold any character (a space, say); the
    bucket name may not hold white space."""
    bucket = value[5:].split("/", 1)[0]
    return value.startswith("gs://") and bool(bucket) and bucket == "".join(bucket.split())
