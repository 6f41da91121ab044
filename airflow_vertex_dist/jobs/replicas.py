"""Replica waits: named replicas or whole pools are up, read from the job's ``webAccessUris``.

Pure: no Airflow or Google imports.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_vertex_dist.common.replicas import check_replica_names
from airflow_vertex_dist.jobs.dicts import error_suffix, job_state, short_state
from airflow_vertex_dist.jobs.events import Verdict
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES

__all__ = [
    "expected_replicas",
    "replica_condition",
    "replicas_up",
    "resolve_replicas",
    "web_access_enabled",
]


def _job_spec(job: Mapping[str, Any]) -> dict[str, Any]:
    """The CustomJobSpec of a custom job, or the trial job spec of a tuning job."""
    for key in ("jobSpec", "trialJobSpec"):
        spec = job.get(key)
        if isinstance(spec, dict):
            return spec
    return {}


def web_access_enabled(job: Mapping[str, Any]) -> bool:
    return bool(_job_spec(job).get("enableWebAccess"))


def expected_replicas(job: Mapping[str, Any]) -> list[str]:
    """Every replica key of the job, in pool order: ``workerpool0-0``, ``workerpool1-0``, ..."""
    keys: list[str] = []
    pools = _job_spec(job).get("workerPoolSpecs") or []
    for index, pool in enumerate(pools):
        if not isinstance(pool, dict) or not pool:
            continue  # an empty pool keeps the positions of the following ones
        try:
            count = int(pool.get("replicaCount", 1 if index == 0 else 0))
        except (TypeError, ValueError):
            count = 0
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
