"""Persistent resources: the shape of one (its resource pools, v1 ``PersistentResource``), how a rung
uses one, and whether a job's pools fit it.

A job runs on a persistent resource when its ``persistent_resource_id`` names one in its region. Google's
page "Run custom training jobs on a persistent resource"
(https://cloud.google.com/vertex-ai/docs/training/persistent-resource-train) gives the rule this module
checks: each of the job's worker pools matches a resource pool of the resource, machine type (with its
accelerators) and disk type exactly, and asks for at most that pool's ``replica_count`` (its
``max_replica_count`` when it autoscales). Pools of one job that match the same resource pool share it,
so their replicas are added up (the replicas a job holds at once; a job that needs more than the pool
has would never start). ``fit_errors`` says every way a job breaks that rule, naming the job's field.

The bounds of a pool's autoscaling come from the v1 proto (``ResourcePool.AutoscalingSpec``):
``min_replica_count`` at least 1 for a persistent resource, at most ``replica_count`` and below
``max_replica_count``; ``max_replica_count`` at least ``replica_count``. The id of a resource is 1-63
characters of ``^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`` (``CreatePersistentResourceRequest``).
"""

# No ``from __future__ import annotations`` in the modules that define spec models (see job.py).

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from pydantic import Field, field_validator, model_validator
from typing_extensions import Self

from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.specs._base import Duration, SpecModel, check_labels, fail
from airflow_vertex_dist.specs._catalog_rules import default_boot_disk_type
from airflow_vertex_dist.specs.machine import Disk, Machine, check_disk

__all__ = [
    "RESOURCE_ID_RE",
    "PersistentResource",
    "PersistentResourceUse",
    "PoolShape",
    "ResourcePool",
    "fit_errors",
    "pool_shapes",
    "shape_difference",
]

RESOURCE_ID_RE = LazyRegex(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")
_POOL_ID_RE = LazyRegex(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")


class PoolShape(NamedTuple):
    """A resource pool as the fit rule reads it: its machine, disk type and replica bounds."""

    pool_id: str
    machine_type: str
    accelerator_type: str | None
    accelerator_count: int
    boot_disk_type: str
    replica_count: int
    min_replica_count: int | None
    max_replica_count: int | None

    @property
    def capacity(self) -> int:
        """The most replicas the pool holds: ``max_replica_count`` when it autoscales, else
        ``replica_count``."""
        return self.max_replica_count if self.max_replica_count is not None else self.replica_count

    def machine_text(self) -> str:
        gpus = f" {self.accelerator_count}x{self.accelerator_type}" if self.accelerator_type else ""
        return f"{self.machine_type}{gpus} {self.boot_disk_type}"

    def same_shape(self, other: "PoolShape") -> bool:
        """Equal but for the pool id (an id the declared pool leaves out is the service's to give)."""
        return self[1:] == other[1:] and (
            not self.pool_id or not other.pool_id or self.pool_id == other.pool_id
        )


class ResourcePool(SpecModel):
    """A group of identical machines of a persistent resource (v1 ``ResourcePool``): the machine, the
    boot disk (the machine series' default type when left out, as a worker pool's), the replicas, and
    optional autoscaling bounds. ``id`` names the pool in the resource (the service makes one up when
    it is left out)."""

    id: str | None = None
    machine: Machine
    replica_count: int = Field(default=1, ge=1, le=2**31 - 1)
    min_replica_count: int | None = Field(default=None, le=2**31 - 1)
    max_replica_count: int | None = Field(default=None, le=2**31 - 1)
    disk: Disk | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None and not _POOL_ID_RE.match(value):
            fail(f"id: 1-63 lowercase letters, digits or '-', starting with a letter (got {value!r})")
        return value

    @model_validator(mode="after")
    def _check(self) -> Self:
        low, high, count = self.min_replica_count, self.max_replica_count, self.replica_count
        if low is not None and low < 1:
            fail(f"min_replica_count: a persistent resource's pool keeps at least 1 replica (got {low})")
        if low is not None and low > count:
            fail(f"min_replica_count: must be at most replica_count ({count}) (got {low})")
        if high is not None and high < count:
            fail(f"max_replica_count: must be at least replica_count ({count}) (got {high})")
        if low is not None and high is not None and not low < high:
            fail(f"max_replica_count: must be above min_replica_count ({low}) (got {high})")
        check_disk(self.machine.machine_type, self.boot_disk)
        return self

    @property
    def boot_disk(self) -> Disk:
        """The pool's disk: the one it names, else its machine series' default type."""
        if self.disk is not None:
            return self.disk
        return Disk(boot_disk_type=default_boot_disk_type(self.machine.machine_type))

    @property
    def shape(self) -> PoolShape:
        m = self.machine
        return PoolShape(
            self.id or "",
            m.machine_type,
            m.accelerator_type,
            m.accelerator_count if m.accelerator_type else 0,
            self.boot_disk.boot_disk_type,
            self.replica_count,
            self.min_replica_count,
            self.max_replica_count,
        )

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "machineSpec": self.machine.to_api(),
            "replicaCount": str(self.replica_count),
            "diskSpec": self.boot_disk.to_api(),
        }
        if self.id is not None:
            out["id"] = self.id
        autoscaling: dict[str, Any] = {}
        if self.min_replica_count is not None:
            autoscaling["minReplicaCount"] = str(self.min_replica_count)
        if self.max_replica_count is not None:
            autoscaling["maxReplicaCount"] = str(self.max_replica_count)
        if autoscaling:
            out["autoscalingSpec"] = autoscaling
        return out


class PersistentResource(SpecModel):
    """A persistent resource's shape: its id (``resource_id``, the last part of its name), its resource
    pools, and optionally a display name and labels. ``to_api`` is the v1 ``PersistentResource`` body
    of a Create."""

    resource_id: str
    pools: tuple[ResourcePool, ...]
    display_name: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("resource_id")
    @classmethod
    def _resource_id(cls, value: str) -> str:
        if not RESOURCE_ID_RE.match(value):
            fail(
                "resource_id: 1-63 lowercase letters, digits or '-', starting with a letter and not "
                f"ending with '-' (got {value!r})"
            )
        return value

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.pools:
            fail("pools: a persistent resource needs at least one resource pool")
        ids = [pool.id for pool in self.pools if pool.id is not None]
        if len(ids) != len(set(ids)):
            fail(f"pools: every pool's id must be different (got {', '.join(ids)})")
        check_labels("labels", self.labels)
        return self

    @property
    def shapes(self) -> list[PoolShape]:
        return [pool.shape for pool in self.pools]

    def to_api(self, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The Create body, with ``labels`` added to the spec's own."""
        out: dict[str, Any] = {"resourcePools": [pool.to_api() for pool in self.pools]}
        if self.display_name is not None:
            out["displayName"] = self.display_name
        all_labels = {**self.labels, **(labels or {})}
        if all_labels:
            out["labels"] = all_labels
        return out


class PersistentResourceUse(SpecModel):
    """How a rung runs on a persistent resource (``Rung(persistent_resource=...)``).

    ``resource`` is its shape: the job's pools are checked against it when the task is built. With
    ``ensure=False`` (the default) the resource must exist: the rung checks the job against the real
    resource's pools before it creates the job. With ``ensure=True`` the task creates it when it is
    missing, reuses it when a resource of that id has this shape, and refuses one of another shape;
    ``idle_timeout`` (ensured resources only) is written on the resource it creates, and the sweep
    operator deletes the resource once no job used it for that long.
    """

    resource: PersistentResource
    ensure: bool = False
    idle_timeout: Duration | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.idle_timeout is not None:
            if not self.ensure:
                fail(
                    "idle_timeout: only for an ensured resource (ensure=True); a resource the task did "
                    "not create is not the task's to delete"
                )
            if self.idle_timeout < timedelta(minutes=1):
                fail(f"idle_timeout: must be at least 60s (got {self.idle_timeout.total_seconds():g}s)")
        return self


def _int(value: Any, default: int | None = None) -> int | None:
    return default if value in (None, "") else int(value)


def pool_shapes(resource: Mapping[str, Any]) -> list[PoolShape]:
    """The pools of a ``PersistentResource`` as the API returns it (v1 JSON: int64 as strings)."""
    shapes = []
    for pool in resource.get("resourcePools") or ():
        machine = pool.get("machineSpec") or {}
        machine_type = str(machine.get("machineType", ""))
        accelerator = machine.get("acceleratorType")
        if accelerator in (None, "", "ACCELERATOR_TYPE_UNSPECIFIED"):
            accelerator = None
        disk = (pool.get("diskSpec") or {}).get("bootDiskType") or default_boot_disk_type(machine_type)
        autoscaling = pool.get("autoscalingSpec") or {}
        shapes.append(
            PoolShape(
                str(pool.get("id", "")),
                machine_type,
                accelerator,
                (_int(machine.get("acceleratorCount"), 0) or 0) if accelerator else 0,
                str(disk),
                _int(pool.get("replicaCount"), 0) or 0,
                _int(autoscaling.get("minReplicaCount")),
                _int(autoscaling.get("maxReplicaCount")),
            )
        )
    return shapes


def shape_difference(declared: Sequence[PoolShape], actual: Sequence[PoolShape]) -> str | None:
    """How a real resource's pools (``actual``) differ from the declared ones, or ``None`` when every
    declared pool has an equal real pool and the real resource has no other pool."""
    left = list(actual)
    for index, pool in enumerate(declared):
        match = next((real for real in left if pool.same_shape(real)), None)
        if match is None:
            have = "; ".join(_pool_text(real) for real in actual) or "none"
            return (
                f"pools[{index}] ({_pool_text(pool)}) has no equal pool in the resource (its pools: {have})"
            )
        left.remove(match)
    if left:
        return f"the resource has pools the spec does not declare: {'; '.join(_pool_text(p) for p in left)}"
    return None


def _pool_text(pool: PoolShape) -> str:
    bounds = ""
    if pool.min_replica_count is not None or pool.max_replica_count is not None:
        bounds = f", autoscaling {pool.min_replica_count or '-'}..{pool.max_replica_count or '-'}"
    name = f"{pool.pool_id}: " if pool.pool_id else ""
    return f"{name}{pool.replica_count}x {pool.machine_text()}{bounds}"


def _job_pools(job: Any) -> list[tuple[str, Machine, str, int]]:
    """``(field, machine, boot disk type, replicas)`` of every pool the job uses, reducers included."""
    from airflow_vertex_dist.specs.cluster import POOL_ROLES

    out = []
    for role in POOL_ROLES:
        pool = getattr(job, role)
        if pool is not None:
            out.append((role, pool.machine, pool.disk.boot_disk_type, pool.replica_count))
    reducers = job.reduction_server
    if reducers is not None:
        count = int(job.reducer_count or 0)
        out.append(("reduction_server", reducers.machine, reducers.disk.boot_disk_type, count))
    return out


def fit_errors(job: Any, resource_id: str, pools: Sequence[PoolShape]) -> list[str]:
    """Every way the pools of ``job`` (a ``DistributedTrainingJob``) break the fit rule of the module
    doc on resource ``resource_id`` whose pools are ``pools``: one line per pool, naming its field."""
    errors: list[str] = []
    used: dict[int, list[tuple[str, int]]] = {}
    have = "; ".join(_pool_text(p) for p in pools) or "none"
    for field, machine, disk_type, replicas in _job_pools(job):
        accelerator = machine.accelerator_type
        count = machine.accelerator_count if accelerator else 0
        key = (machine.machine_type, accelerator, count, disk_type)
        index = next((i for i, p in enumerate(pools) if (p[1], p[2], p[3], p[4]) == key), None)
        if index is None:
            gpus = f" {count}x{accelerator}" if accelerator else ""
            errors.append(
                f"{field}.machine: {machine.machine_type}{gpus} with a {disk_type} boot disk matches no "
                f"resource pool of persistent resource {resource_id!r} (machine type, accelerators and "
                f"disk type must be equal; its pools: {have})"
            )
            continue
        used.setdefault(index, []).append((field, replicas))
    for index, fields in used.items():
        pool = pools[index]
        total = sum(replicas for _field, replicas in fields)
        if total > pool.capacity:
            bound = "max_replica_count" if pool.max_replica_count is not None else "replica_count"
            names = " + ".join(f"{field} {replicas}" for field, replicas in fields)
            sums = f"{names} = " if len(fields) > 1 else ""
            errors.append(
                f"{fields[-1][0]}.replica_count: {sums}{total} replicas on resource pool "
                f"{pool.pool_id or index} of persistent resource {resource_id!r}, above its {bound} "
                f"({pool.capacity}); ask for fewer replicas, or give the pool more"
            )
    return errors
