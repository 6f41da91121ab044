"""Reading a trainer's checkpoint directory (a ``gs://`` URI) from Cloud Storage: the objects under it
and when each was last written (``updated``), for the time a preemption cost (``jobs.checkpoint_loss``).

``VertexCheckpointsHook`` lists them with the stock ``google-cloud-storage`` client, as the trainers
write them: with the connection's credentials (its impersonation chain and quota project too) on
Google Cloud; on an emulator connection with the emulator's credentials (anonymous, or its access
token) at the Cloud Storage API ``STORAGE_EMULATOR_HOST`` names, where the stock client goes by itself
(an emulator connection without it has no Cloud Storage to read: ``ValueError``). Importing this module
loads no ``google.cloud`` module.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NamedTuple

from airflow_vertex_dist.hooks.connection import DEFAULT_CONN_ID
from airflow_vertex_dist.hooks.hook_base import VertexHookBase

__all__ = ["CheckpointObject", "VertexCheckpointsHook", "split_uri"]

#: the most objects read from one directory (the newest are what matter; a listing is name-ordered)
MAX_OBJECTS = 100_000


class CheckpointObject(NamedTuple):
    """One object of the directory: its name (relative to the directory) and its ``updated`` time
    (RFC 3339)."""

    name: str
    updated: str


def split_uri(uri: str) -> tuple[str, str]:
    """``gs://bucket/a/b/`` -> ``("bucket", "a/b/")`` (the prefix ends with ``/`` unless empty)."""
    if not uri.startswith("gs://"):
        raise ValueError(f"not a Cloud Storage URI gs://bucket/...: {uri!r}")
    bucket, _, prefix = uri[5:].partition("/")
    if not bucket:
        raise ValueError(f"no bucket in {uri!r}")
    prefix = prefix.strip("/")
    return bucket, (prefix + "/" if prefix else "")


class VertexCheckpointsHook(VertexHookBase):
    """The objects of a checkpoint directory (see the module doc). No network in ``__init__``."""

    def __init__(
        self,
        vertex_dist_conn_id: str = DEFAULT_CONN_ID,
        *,
        project_id: str | None = None,
        impersonation_chain: str | Sequence[str] | None = None,
    ) -> None:
        super().__init__(vertex_dist_conn_id, project_id=project_id, impersonation_chain=impersonation_chain)
        self._client: Any = None

    def get_conn(self) -> Any:
        """The stock ``google.cloud.storage.Client``."""
        if self._client is None:
            from google.cloud import storage  # type: ignore[attr-defined]

            from airflow_vertex_dist.hooks._clients import build_credentials

            conn = self.connection
            if conn.is_emulator and not os.environ.get("STORAGE_EMULATOR_HOST"):
                raise ValueError(
                    "STORAGE_EMULATOR_HOST is not set: an emulator connection reads Cloud Storage at the "
                    "emulator's Cloud Storage API, which that variable names"
                )
            credentials = build_credentials(conn)[0]
            self._client = storage.Client(project=self.project_id, credentials=credentials)
        return self._client

    def objects(self, uri: str, match_glob: str | None = None) -> list[CheckpointObject]:
        """The objects under ``uri`` (every depth; ``match_glob`` relative to it), oldest first."""
        bucket, prefix = split_uri(uri)
        client = self.get_conn()
        kwargs: dict[str, Any] = {"prefix": prefix, "max_results": MAX_OBJECTS}
        if match_glob:
            kwargs["match_glob"] = prefix + match_glob
        found = [
            CheckpointObject(blob.name[len(prefix) :], _rfc3339(blob.updated))
            for blob in client.list_blobs(bucket, **kwargs)
            if blob.updated is not None and not blob.name.endswith("/")
        ]
        return sorted(found, key=lambda o: o.updated)

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()


def _rfc3339(when: Any) -> str:
    from airflow_vertex_dist.common.rfc3339 import format_rfc3339

    return format_rfc3339(when)
