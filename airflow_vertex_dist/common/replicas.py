"""Replica names as Vertex AI writes them (``workerpool<pool>-<index>``, the keys of ``webAccessUris`` and
the ``task_name`` of replica logs), and the pool pattern ``workerpool<pool>-*``: the syntax checked at
DAG-parse time by the sensors and ``stream_logs`` (a light module: a training DAG file that imports it
loads none of the wait rules)."""

from __future__ import annotations

from collections.abc import Sequence

from airflow_vertex_dist.common.regex import LazyRegex

__all__ = ["REPLICA_NAME_RE", "check_replica_names"]

#: ``workerpool<0-3>-<index>``, or ``workerpool<0-3>-*`` for every replica of a pool
REPLICA_NAME_RE = LazyRegex(r"^workerpool([0-3])-(\d+|\*)$")


def check_replica_names(replicas: Sequence[str], *, field: str = "replicas") -> list[str]:
    """Syntax check, at DAG-parse time: ``workerpool<0-3>-<index>`` or ``workerpool<0-3>-*``."""
    if isinstance(replicas, str):
        replicas = [replicas]
    names = [str(r).strip() for r in replicas]
    if not names:
        raise ValueError(f"{field}: name at least one replica (workerpool1-0) or pool (workerpool1-*)")
    for i, name in enumerate(names):
        if not REPLICA_NAME_RE.match(name):
            raise ValueError(
                f"{field}[{i}]: {name!r} is not a replica name: use workerpool<0-3>-<index> "
                "or workerpool<0-3>-* for a whole pool"
            )
    return names
