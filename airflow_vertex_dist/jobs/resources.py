"""What a returned ``PersistentResource`` (v1 JSON) means to the provider: its state, the jobs that run
on it, when it was last used, and whether the sweep may delete it.

An ensured resource carries ``managed-by=airflow-vertex-dist`` and its idle timeout
(``airflow-idle-timeout``: seconds, as ``"3600s"``). Its last use is read from the service, never
stamped: the latest of the resource's own ``createTime`` and ``startTime`` and the ``endTime`` of every
job (CustomJob or tuning job) whose spec names it; a job that has not ended, or a pool with replicas in
use (``usedReplicaCount``), makes it busy. So the sweep needs no write to the resource (the API's
Update is not needed) and a resource a job uses is never taken for idle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES

__all__ = [
    "IDLE_TIMEOUT_LABEL",
    "READY_STATE",
    "Idleness",
    "idle_timeout_label",
    "idle_timeout_of",
    "idleness",
    "job_resource_id",
    "resource_id_of",
    "resource_state",
]

#: The label an ensured resource carries its idle timeout in (``"<seconds>s"``).
IDLE_TIMEOUT_LABEL = "airflow-idle-timeout"
#: The state in which a persistent resource runs jobs.
READY_STATE = "RUNNING"


class Idleness(NamedTuple):
    """Whether a resource is in use (``busy``, with why) and, when not, how long it has been idle."""

    busy: str | None
    idle_s: float


def resource_state(resource: Mapping[str, Any]) -> str:
    return str(resource.get("state") or "STATE_UNSPECIFIED")


def resource_id_of(resource: Mapping[str, Any]) -> str:
    """The last part of the resource's name."""
    return str(resource.get("name", "")).rsplit("/", 1)[-1]


def idle_timeout_label(seconds: float) -> dict[str, str]:
    return {IDLE_TIMEOUT_LABEL: f"{int(seconds)}s"}


def idle_timeout_of(resource: Mapping[str, Any]) -> float | None:
    """The idle timeout an ensured resource carries (seconds), or ``None`` (none, or not a number)."""
    value = str((resource.get("labels") or {}).get(IDLE_TIMEOUT_LABEL, ""))
    if not value.endswith("s") or not value[:-1].isdigit():
        return None
    return float(value[:-1])


def job_resource_id(job: Mapping[str, Any]) -> str | None:
    """The persistent resource a job's spec names (a tuning job's trial spec), or ``None``."""
    spec = job.get("jobSpec") or job.get("trialJobSpec") or {}
    value = spec.get("persistentResourceId")
    return str(value) if value else None


def _nanos(value: Any) -> int | None:
    try:
        return rfc3339_nanos(str(value)) if value else None
    except ValueError:
        return None


def idleness(resource: Mapping[str, Any], jobs: Iterable[Mapping[str, Any]], now_ns: int) -> Idleness:
    """Whether ``resource`` is busy at ``now_ns`` and how long it has been idle (see the module doc);
    ``jobs`` may hold any jobs of the region: those that name another resource are skipped."""
    rid = resource_id_of(resource)
    for pool in resource.get("resourcePools") or ():
        used = int(pool.get("usedReplicaCount") or 0)
        if used:
            return Idleness(f"pool {pool.get('id') or '?'} has {used} replicas in use", 0.0)
    times = [_nanos(resource.get("createTime")), _nanos(resource.get("startTime"))]
    for job in jobs:
        if job_resource_id(job) != rid:
            continue
        if str(job.get("state")) not in TERMINAL_STATES:
            return Idleness(f"job {job.get('name')} runs on it ({job.get('state')})", 0.0)
        times.append(_nanos(job.get("endTime")) or _nanos(job.get("updateTime")))
    known = [t for t in times if t is not None]
    last = max(known) if known else now_ns
    return Idleness(None, max(0.0, (now_ns - last) / 1e9))
