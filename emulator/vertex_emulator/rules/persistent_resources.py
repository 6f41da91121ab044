"""The emulator's rules for persistent resources: what a CreatePersistentResource may ask for, and whether
a CustomJob fits the resource it names. Each rule's id is cited next to its code; ``sources.RULES`` has its
text and source.

Inputs are v1 JSON (``json_format.MessageToDict``: camelCase names, enum names, proto3 defaults left out).
``job-on-resource`` (the resource named exists in the job's project and location and is RUNNING) needs the
store: persistent_resources/service.py ``check_job`` applies it, then ``job_fit``. ``pr-delete-cancels`` (a
Delete cancels the jobs on the resource first) is the resource's lifecycle's
(persistent_resources/lifecycle.py ``stop``).
Problems are ``"<field path>: <message>"`` strings in the request's snake_case names, as the other rule
modules write them (``format_problems`` lays them out as the service does).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vertex_emulator._generated import catalog
from vertex_emulator.rules.machines import disk_problems, location_problems, machine_problems

__all__ = [
    "ID_RE",
    "job_fit",
    "pool_capacity",
    "pool_id",
    "pool_size",
    "resource_problems",
]

#: ``pr-id``: CreatePersistentResourceRequest.persistent_resource_id's pattern.
ID_RE = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def pool_id(pool: Mapping[str, Any], index: int) -> str:
    """A pool's id: its own, else one the emulator derives from its place (the service generates one
    "automatically"; its form is not documented)."""
    return str(pool.get("id") or f"pool-{index}")


def pool_size(pool: Mapping[str, Any]) -> int:
    """The replicas a pool provisions at creation: ``replica_count``, else autoscaling's minimum
    ("if min-replica-count is set to 4, 4 instances are always provisioned")."""
    auto = pool.get("autoscalingSpec") or {}
    return _int(pool.get("replicaCount")) or _int(auto.get("minReplicaCount"))


def pool_capacity(pool: Mapping[str, Any]) -> int:
    """The most replicas a job may take from a pool: ``max_replica_count`` with autoscaling, else
    ``replica_count`` (``job-pool-replicas``)."""
    auto = pool.get("autoscalingSpec") or {}
    return _int(auto.get("maxReplicaCount")) or pool_size(pool)


def _pool_problems(pool: Mapping[str, Any], path: str, location: str) -> list[str]:
    problems: list[str] = []
    machine = pool.get("machineSpec") or {}
    if not machine.get("machineType"):  # ``pr-pools``
        return [f"{path}.machine_spec: Required field is not set."]
    problems += machine_problems(dict(machine), location, f"{path}.machine_spec")
    problems += disk_problems(dict(pool.get("diskSpec") or {}), f"{path}.disk_spec", machine["machineType"])
    auto = pool.get("autoscalingSpec")
    count = _int(pool.get("replicaCount"))
    if not auto:
        if count < 1:  # ``pr-replicas``
            problems.append(f"{path}.replica_count: must be at least 1 (got {count})")
        return problems
    low, high = _int(auto.get("minReplicaCount")), _int(auto.get("maxReplicaCount"))
    where = f"{path}.autoscaling_spec"
    if low <= 0:  # ``pr-autoscaling``
        problems.append(f"{where}.min_replica_count: must be > 0 for a persistent resource (got {low})")
    if high and high <= low:
        problems.append(f"{where}.max_replica_count: must be > min_replica_count ({high} <= {low})")
    if count and (count < low or (high and count > high)):
        problems.append(
            f"{path}.replica_count: must be between min_replica_count and max_replica_count ({low} to "
            f"{high or 'unset'}; got {count})"
        )
    return problems


def resource_problems(resource_id: str, resource: Mapping[str, Any], location: str) -> list[str]:
    """Why CreatePersistentResource refuses ``resource`` (v1 JSON) named ``resource_id`` (none: it may
    be created)."""
    problems = list(location_problems(location))
    if not resource_id:
        problems.append("persistent_resource_id: Required field is not set.")
    elif not ID_RE.fullmatch(resource_id):  # ``pr-id``
        problems.append(
            f"persistent_resource_id: {resource_id!r} must be at most 63 characters matching "
            "/^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/"
        )
    pools = resource.get("resourcePools") or []
    if not pools:  # ``pr-pools``
        problems.append("persistent_resource.resource_pools: Required field is not set.")
    seen: set[str] = set()
    for index, pool in enumerate(pools):
        path = f"persistent_resource.resource_pools[{index}]"
        problems += _pool_problems(pool, path, location)
        ident = pool_id(pool, index)
        if ident in seen:  # ``pr-pool-ids``
            problems.append(f"{path}.id: {ident!r} names another pool of this resource")
        seen.add(ident)
    return problems


def _shape(machine: Any, disk: Any) -> tuple[str, str, int, str]:
    machine = machine if isinstance(machine, Mapping) else {}
    disk = disk if isinstance(disk, Mapping) else {}
    accelerator = str(machine.get("acceleratorType") or "")
    if accelerator == "ACCELERATOR_TYPE_UNSPECIFIED":
        accelerator = ""
    machine_type = str(machine.get("machineType") or "")
    series = catalog.MACHINE_SERIES.get(machine_type, "")
    default_disk = catalog.SERIES_BOOT_DISK_DEFAULT.get(series, catalog.DEFAULT_BOOT_DISK_TYPE)
    return (
        machine_type,
        accelerator,
        _int(machine.get("acceleratorCount")) if accelerator else 0,
        str(disk.get("bootDiskType") or default_disk),  # unset: the series' default, as a job's
    )


def _describe(shape: tuple[str, str, int, str]) -> str:
    machine, accelerator, count, disk = shape
    gpus = f" with {count} {accelerator}" if accelerator else ""
    return f"{machine}{gpus}, boot disk {disk}"


def job_fit(resource: Mapping[str, Any], job_spec: Mapping[str, Any]) -> tuple[dict[str, int], list[str]]:
    """The replicas a CustomJob's worker pools take from each of the resource's pools (by pool id), and
    why the job does not fit (``job-pool-match``, ``job-pool-replicas``; none: it fits)."""
    pools = [(pool_id(pool, i), pool) for i, pool in enumerate(resource.get("resourcePools") or [])]
    taken: dict[str, int] = {}
    problems: list[str] = []
    for index, spec in enumerate(job_spec.get("workerPoolSpecs") or []):
        if not isinstance(spec, Mapping) or not spec:
            continue  # an empty pool (a placeholder for a pool index) runs nothing
        path = f"custom_job.job_spec.worker_pool_specs[{index}]"
        want = _shape(spec.get("machineSpec"), spec.get("diskSpec"))
        match = next(
            ((i, p) for i, p in pools if _shape(p.get("machineSpec"), p.get("diskSpec")) == want), None
        )
        if match is None:
            have = "; ".join(
                f"{i}: {_describe(_shape(p.get('machineSpec'), p.get('diskSpec')))}" for i, p in pools
            )
            problems.append(
                f"{path}.machine_spec: {_describe(want)} matches no resource pool of "
                f"{resource.get('name')} (its pools: {have})"
            )
            continue
        ident, pool = match
        count = _int(spec.get("replicaCount"))
        taken[ident] = taken.get(ident, 0) + count
        limit = pool_capacity(pool)
        if count > limit:
            bound = (
                "max_replica_count"
                if (pool.get("autoscalingSpec") or {}).get("maxReplicaCount")
                else "replica_count"
            )
            problems.append(
                f"{path}.replica_count: {count} is more than resource pool {ident}'s {bound} ({limit})"
            )
        elif taken[ident] > limit:
            problems.append(
                f"{path}.replica_count: the job's worker pools take {taken[ident]} replicas of resource pool "
                f"{ident}, more than its {limit}"
            )
    return taken, problems
