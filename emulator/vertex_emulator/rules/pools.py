"""Rules on the layout of ``CustomJobSpec.worker_pool_specs`` and on each used pool.

Sources:

* ``pool-0``: ``CustomJobSpec.worker_pool_specs``: "Required. [...] All worker pools except the first
  one are optional and can be skipped by providing an empty value." and "Distributed training"
  (https://cloud.google.com/vertex-ai/docs/training/distributed-training): "You must specify a primary
  replica [...] Use the first worker pool specification only for your primary replica".
* ``primary-replicas``: the same page: "and set its replicaCount to 1".
* ``pool-count``: the same page: worker pools 0 (primary), 1 (workers), 2 (parameter servers or the
  Reduction Server) and 3 (evaluators), "The order of the worker pools you specify in the
  workerPoolSpecs[] list determines the type of worker pool"; there is no fifth role.
* ``pool-replicas``: the same page: "Set empty values for worker pools that you don't want to use".
  A pool that is not empty is used, and a used pool needs a replica; proto3 reads an omitted
  ``replicaCount`` as 0. (That the service refuses 0, rather than running the pool with none, is
  inferred.) An empty pool anywhere after pool 0, trailing ones included, is a skipped pool.
* ``pool-task``: ``WorkerPoolSpec.task`` is a oneof of ``container_spec`` and ``python_package_spec``:
  a used pool needs something to run, and the wire cannot carry both.
* ``machine-type``: ``MachineSpec.machine_type``: "for [...] CustomJob [...] as part of
  WorkerPoolSpec this field is required." The machine itself (type, accelerators and their counts,
  where they are offered) and the boot disk are judged by ``rules.machines``.
* ``nfs-path``: ``NfsMount.path``: "Has to start with '/'".
* ``reservation``: ``ReservationAffinity.Type.SPECIFIC_RESERVATION``: "When chosen, the reservation must
  be identified via the key and values fields" (``key``: "To target a SPECIFIC_RESERVATION by name, use
  compute.googleapis.com/reservation-name as the key"). Key and values with another type are not
  refused: the reference does not say they are.
* ``tpu-pools``: Google's "Configure compute resources" page (TPUs, read 2026-12-07): "When you use a
  TPU VM [...], you must only use a single worker pool for custom training, and you must configure this
  worker pool to use only one replica" (``catalog.TPU_POOLS``). A pool is on TPUs when its machine type
  is a TPU one or its accelerator is a TPU; the pool's one replica is ``primary-replicas``' rule.
"""

from __future__ import annotations

from typing import Any

from vertex_emulator._generated import catalog
from vertex_emulator.rules import machines
from vertex_emulator.rules._common import enum_name, has, problem, to_dict

__all__ = ["MAX_POOLS", "pool_problems", "tpu_asked"]

MAX_POOLS = 4


def _one_pool(pool: Any, index: int, location: str, path: str) -> list[str]:
    out: list[str] = []
    if index == 0 and pool.replica_count != 1:
        out.append(
            problem(
                f"{path}.replica_count",
                f"worker pool 0 holds the primary replica: replicaCount must be 1 (got {pool.replica_count})",
            )
        )
    elif pool.replica_count < 1:
        out.append(
            problem(
                f"{path}.replica_count",
                f"a worker pool in use needs at least 1 replica (got {pool.replica_count}; an omitted "
                "replicaCount is 0); send an empty pool {} to skip it",
            )
        )
    if pool.WhichOneof("task") is None:
        out.append(problem(path, "one of container_spec or python_package_spec is required"))
    if not pool.machine_spec.machine_type:
        out.append(problem(f"{path}.machine_spec.machine_type", "Required field is not set."))
    else:
        out.extend(machines.machine_problems(to_dict(pool.machine_spec), location, f"{path}.machine_spec"))
    machine = pool.machine_spec
    if has(machine, "reservation_affinity"):
        affinity = machine.reservation_affinity
        if enum_name(affinity, "reservation_affinity_type") == "SPECIFIC_RESERVATION" and not (
            affinity.key and affinity.values
        ):
            out.append(
                problem(
                    f"{path}.machine_spec.reservation_affinity",
                    "SPECIFIC_RESERVATION must identify the reservation with key "
                    "(compute.googleapis.com/reservation-name) and values (the reservation's resource name)",
                )
            )
    out.extend(
        machines.disk_problems(to_dict(pool.disk_spec), f"{path}.disk_spec", pool.machine_spec.machine_type)
    )
    for mount_index, mount in enumerate(pool.nfs_mounts):
        if mount.path and not mount.path.startswith("/"):
            out.append(
                problem(f"{path}.nfs_mounts[{mount_index}].path", f"must start with '/' (got {mount.path!r})")
            )
    return out


def pool_problems(spec: Any, location: str, path: str) -> list[str]:
    """The layout rules of a raw ``CustomJobSpec`` and the rules of each used pool."""
    pools = spec.worker_pool_specs
    where = f"{path}.worker_pool_specs"
    if not pools:
        return []  # Required: rules/required.py
    out: list[str] = []
    if len(pools) > MAX_POOLS:
        out.append(
            problem(
                where,
                f"at most {MAX_POOLS} worker pools (primary, workers, parameter servers or Reduction Server, "
                f"evaluators) (got {len(pools)})",
            )
        )
    if pools[0].ByteSize() == 0:
        out.append(
            problem(f"{where}[0]", "worker pool 0 (the primary replica) is required; it cannot be empty")
        )
    for index, pool in enumerate(pools):
        if pool.ByteSize():
            out.extend(_one_pool(pool, index, location, f"{where}[{index}]"))
    return out + _tpu_pool_problems(pools, where)


def tpu_asked(pool: Any) -> str | None:
    """The TPU machine type or accelerator a raw ``WorkerPoolSpec`` asks for, or ``None``."""
    machine = pool.machine_spec
    if machine.machine_type in catalog.TPU_MACHINES:
        return str(machine.machine_type)
    accelerator = enum_name(machine, "accelerator_type")
    return accelerator if accelerator.startswith("TPU_") else None


def _tpu_pool_problems(pools: Any, where: str) -> list[str]:
    """``tpu-pools``: a job on TPUs has a single worker pool (of one replica)."""
    used = [index for index, pool in enumerate(pools) if pool.ByteSize()]
    on_tpus = [(index, asked) for index in used if (asked := tpu_asked(pools[index])) is not None]
    limit = catalog.TPU_POOLS[0]
    if not on_tpus or len(used) <= limit:
        return []
    extra = [index for index in used if index != used[0]]
    index, asked = on_tpus[0]
    return [
        problem(
            f"{where}[{extra[0]}]",
            f"a job on TPU VMs ({asked} in worker pool {index}) uses only a single worker pool, of one "
            f"replica (got worker pools {', '.join(str(i) for i in used)})",
        )
    ]
