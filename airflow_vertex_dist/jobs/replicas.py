"""Replica waits: named replicas or whole pools are up, read from the job's ``webAccessUris``.

Pure: no Airflow or Google imports.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_vertex_dist.common.replicas import check_replica_names
from airflow_vertex_dist.jobs.dicts import error_suffix, job_spec, job_state, short_state
from airflow_vertex_dist.jobs.events import Verdict
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES

__all__ = [
    "expected_replicas",
    "replica_condition",
    "replica_count",
    "replicas_up",
    "resolve_replicas",
    "web_access_enabled",
]


def replica_count(pool: Mapping[str, Any], *, field: str = "replicaCount") -> int:
    """A worker pool's ``replicaCount``, the one reading of it for every pool of a returned job or a
    request body: omitted or null -> 0 (the proto3 default, which the v1 JSON form leaves out; the
    service refuses a primary pool without its 1, so a job it returns always carries it); an ``int``
    or a decimal string (the JSON form writes an int64 as a string) -> that ``int``; anything else ->
    ``ValueError`` naming ``field`` and the rule."""
    raw = pool.get("replicaCount")
    if raw is None:
        return 0
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        digits = raw[1:] if raw.startswith("-") else raw
        if digits.isascii() and digits.isdigit():
            return int(raw)
    raise ValueError(
        f"{field}: must be an integer or a decimal string (the JSON form of an int64), "
        f"or be left out for 0 (got {raw!r})"
    )


def web_access_enabled(job: Mapping[str, Any]) -> bool:
    return bool(job_spec(job).get("enableWebAccess"))


def expected_replicas(job: Mapping[str, Any]) -> list[str]:
    """Every replica key of the job, in pool order: ``workerpool0-0``, ``workerpool1-0``, ...
    ``ValueError`` (from ``replica_count``) when a pool's ``replicaCount`` is not a count."""
    keys: list[str] = []
    pools = job_spec(job).get("workerPoolSpecs") or []
    for index, pool in enumerate(pools):
        if not isinstance(pool, dict) or not pool:
            continue  # an empty pool keeps the positions of the following ones
        count = replica_count(pool, field=f"workerPoolSpecs[{index}].replicaCount")
        keys.extend(f"workerpool{index}-{i}" for i in range(count))
    return keys


def replicas_up(job: Mapping[str, Any]) -> set[str]:
    """Replica keys that have a web access URI, i.e. are up."""
    uris = job.get("webAccessUris")
    return set(uris) if isinstance(uris, dict) else set()


def resolve_replicas(
    job: Mapping[str, Any], replicas: Sequence[str], *, field: str = "replicas"
) -> list[str]:
    """Expand pool patterns against the job's pools; error when a name matches none of its replicas."""
    expected = expected_replicas(job)
    resolved: list[str] = []
    for i, name in enumerate(check_replica_names(replicas, field=field)):
        matches = [key for key in expected if fnmatch.fnmatchcase(key, name)]
        if not matches:
            have = ", ".join(expected) or "none"
            raise ValueError(
                f"{field}[{i}]: {name!r} matches no replica of job {job.get('name', '?')} (it has: {have})"
            )
        resolved.extend(key for key in matches if key not in resolved)
    return resolved


def replica_condition(job: Mapping[str, Any], replicas: Sequence[str]) -> Verdict | None:
    """Success once every wanted replica is up; error when the job cannot show it or ended first."""
    name = job.get("name", "?")
    if "/hyperparameterTuningJobs/" in str(name):
        return Verdict(
            "error",
            f"job {name} is a tuning job: its replicas belong to its trials; wait on a trial's "
            "CustomJob (trials[].customJob) instead",
        )
    if not web_access_enabled(job):
        return Verdict(
            "error",
            f"job {name} was created without enableWebAccess: replicas are visible only through "
            "webAccessUris, so set enable_web_access=True on the spec to wait for them",
        )
    try:
        wanted = resolve_replicas(job, replicas)
    except ValueError as exc:
        return Verdict("error", str(exc))
    up = replicas_up(job)
    missing = [key for key in wanted if key not in up]
    if not missing:
        return Verdict("success", f"replicas up {len(wanted)}/{len(wanted)}: {', '.join(wanted)}")
    state = job_state(job)
    if state in TERMINAL_STATES:
        return Verdict(
            "error",
            f"job {name} ended {short_state(state)} before replicas {', '.join(missing)} were up"
            f"{error_suffix(job)}",
        )
    return None
