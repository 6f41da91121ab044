"""The rules of a ``DistributedTrainingJob`` that span its pools: the Reduction Server's sizing
(``ReducerSizing``) and requirements, flex-start's requirements (``FLEX_START_GPUS``), the strategies
that consume no reservation (``check_reservations``) and the Cloud KMS key (shared with the tuning
job). ``DistributedTrainingJob``'s cross-field validator calls them."""

# No ``from __future__ import annotations`` in the modules that define spec models (see specs/job.py).

import math
from collections.abc import Mapping
from datetime import timedelta

from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.specs._base import LOGGER, SpecModel, fail
from airflow_vertex_dist.specs.bandwidth import egress_gbps
from airflow_vertex_dist.specs.cluster import ReductionServer, WorkerPool
from airflow_vertex_dist.specs.machine import Machine
from airflow_vertex_dist.specs.options import Scheduling

__all__ = [
    "FLEX_START_GPUS",
    "ReducerSizing",
    "check_flex_start",
    "check_kms_key",
    "check_kms_key_location",
    "check_reservations",
    "check_reduction_server",
    "check_tpu_pools",
    "machine_egress_gbps",
    "reducer_sizing",
]

_KMS_RE = LazyRegex(r"^projects/[^/\s]+/locations/[^/\s]+/keyRings/[^/\s]+/cryptoKeys/[^/\s]+$")

#: "Schedule training jobs based on resource availability" (Requirements): "Your serverless training job
#: requests L4, A100, H100, H200, or B200 GPUs", "a maximum timeout of 7 days or less", "the same machine
#: configuration for all worker pools".
FLEX_START_GPUS = frozenset(
    {
        "NVIDIA_L4",
        "NVIDIA_TESLA_A100",
        "NVIDIA_A100_80GB",
        "NVIDIA_H100_80GB",
        "NVIDIA_H100_MEGA_80GB",
        "NVIDIA_H200_141GB",
        "NVIDIA_B200",
    }
)
_FLEX_START_MAX_TIMEOUT = timedelta(days=7)


def check_kms_key_location(key: str | None, location: str | None, field: str = "encryption_key") -> None:
    """The v1 ``EncryptionSpec.kms_key_name``: "The key needs to be in the same region as where the
    compute resource is created"."""
    if key is None or location is None:
        return
    key_location = key.split("/")[3]
    if key_location != location:
        fail(
            f"{field}: the key must be in the job's region {location} (got a key in {key_location}); use a "
            f"key ring in {location}"
        )


def check_kms_key(value: str | None) -> str | None:
    """Cloud KMS key name rule shared by custom and tuning jobs."""
    if value is not None and not _KMS_RE.match(value):
        fail(
            "encryption_key: must be 'projects/{p}/locations/{l}/keyRings/{r}/cryptoKeys/{k}' "
            f"(got {value!r})"
        )
    return value


def machine_egress_gbps(machine: Machine) -> float | None:
    """Egress bandwidth of one replica on ``machine`` (see ``bandwidth``)."""
    return egress_gbps(machine.machine_type, machine.accelerator_type, machine.accelerator_count)


class ReducerSizing(SpecModel):
    """How many reducers pools 0 and 1 need: ``needed`` is ``None`` when a bandwidth is unknown."""

    training_gbps: float | None
    reducer_gbps: float | None
    needed: int | None


def reducer_sizing(
    primary: WorkerPool, workers: WorkerPool | None, reduction_server: ReductionServer | None
) -> ReducerSizing:
    """Bandwidth of pools 0 and 1, of one reducer, and the reducer count that matches."""
    total: float | None = 0.0
    for pool in (primary, workers):
        if pool is None:
            continue
        gbps = machine_egress_gbps(pool.machine)
        total = None if gbps is None or total is None else total + gbps * pool.replica_count
    machine_type = reduction_server.machine_type if reduction_server else "n1-highcpu-16"
    per = egress_gbps(machine_type)
    needed = None if total is None or not per else max(1, math.ceil(total / per - 1e-9))
    return ReducerSizing(training_gbps=total, reducer_gbps=per, needed=needed)


def check_flex_start(
    pools: Mapping[str, WorkerPool], reduction_server: ReductionServer | None, scheduling: Scheduling
) -> None:
    """Flex-start's requirements (``FLEX_START_GPUS``): every pool (``pools``: the used ones by role)
    the same machine with one of those GPUs, and a timeout of 7 days or less."""
    shapes: dict[str, tuple[str, str | None, int]] = {}
    for role, pool in pools.items():
        m = pool.machine
        shapes[role] = (m.machine_type, m.accelerator_type, m.accelerator_count)
    if reduction_server is not None:
        shapes["reduction_server"] = (reduction_server.machine_type, None, 0)
    for role, (machine_type, gpu, count) in shapes.items():
        if gpu not in FLEX_START_GPUS:
            got = f"{count} x {gpu}" if gpu else "no GPUs"
            fail(
                f"scheduling.strategy: FLEX_START needs L4, A100, H100, H200 or B200 GPUs in every pool "
                f"({role} is {machine_type} with {got}); give every pool one of those GPUs, or use "
                "STANDARD or SPOT"
            )
    if len(set(shapes.values())) > 1:
        described = ", ".join(f"{role}: {m} {g} x{n}" for role, (m, g, n) in shapes.items())
        fail(
            f"scheduling.strategy: FLEX_START needs the same machine configuration in every pool "
            f"({described}); use one machine, GPU and count in every pool, or use STANDARD or SPOT"
        )
    if scheduling.timeout is not None and scheduling.timeout > _FLEX_START_MAX_TIMEOUT:
        fail(
            f"scheduling.timeout: FLEX_START needs a timeout of 7 days or less (got "
            f"{scheduling.timeout.total_seconds():g}s); shorten it, or use STANDARD or SPOT"
        )


def check_reservations(
    pools: Mapping[str, WorkerPool], reduction_server: ReductionServer | None, strategy: str | None
) -> None:
    """FLEX_START and SPOT jobs consume no reservation: "Use reservations with training"
    (https://cloud.google.com/vertex-ai/docs/training/use-reservations) supports flex-start "except
    when using Compute Engine reservations", and the Spot page's "All Spot VMs limitations apply" is
    read the same way. A pool with ``ANY_RESERVATION`` or ``SPECIFIC_RESERVATION`` is refused."""
    if strategy not in ("FLEX_START", "SPOT"):
        return
    affinities = {role: pool.machine.reservation_affinity for role, pool in pools.items()}
    if reduction_server is not None:
        affinities["reduction_server"] = reduction_server.reservation_affinity
    for role, affinity in affinities.items():
        if affinity is not None and affinity.reservation_affinity_type != "NO_RESERVATION":
            where = "reduction_server" if role == "reduction_server" else f"{role}.machine"
            fail(
                f"{where}.reservation_affinity: {strategy} cannot consume a reservation (got "
                f"{affinity.reservation_affinity_type}); use NO_RESERVATION, or the STANDARD strategy"
            )


def check_tpu_pools(pools: dict[str, WorkerPool]) -> None:
    """A job on TPUs has a single worker pool of one replica, the primary (Google's "Configure compute
    resources", TPUs: "you must only use a single worker pool [...] and [...] only one replica";
    ``catalog.TPU_POOLS``); ``pools`` maps the roles in use to their pools."""
    tpu = next((role for role, pool in pools.items() if pool.machine.is_tpu), None)
    if tpu is None:
        return
    asked = pools[tpu].machine.accelerator_type or pools[tpu].machine.machine_type
    if tpu != "primary":
        fail(
            f"{tpu}.machine: a TPU machine ({asked}) runs only in worker pool 0: a job on TPUs has a single "
            f"worker pool of one replica, the primary; move it to primary and drop {tpu}"
        )
    others = [role for role in pools if role != "primary"]
    if others:
        fail(
            f"{others[0]}: a job on TPUs ({asked}) has a single worker pool of one replica, the primary "
            f"(got {', '.join(['primary', *others])}); drop {', '.join(others)}"
        )


def check_reduction_server(primary: WorkerPool, workers: WorkerPool | None, rs: ReductionServer) -> None:
    """The Reduction Server's requirements: GPU (not TPU) primary and workers, and enough reducers for
    their bandwidth (``replica_count="auto"`` needs every bandwidth known; an explicit count below the
    need fails unless ``allow_undersized``, which logs a warning instead)."""
    for role, pool in (("primary", primary), ("workers", workers)):
        if pool is None:
            continue
        if pool.machine.is_tpu:
            fail(
                f"reduction_server: Reduction Server is for GPU all-reduce, not for TPU jobs "
                f"({role} uses {pool.machine.accelerator_type or pool.machine.machine_type}); drop "
                "reduction_server"
            )
        if not pool.machine.has_gpu:
            fail(
                f"reduction_server: Reduction Server needs GPU {role} doing NCCL all-reduce "
                f"({role} is {pool.machine.machine_type} without accelerators); add GPUs to the "
                "primary and the workers (machine.accelerator_type and accelerator_count), or for "
                "CPU training drop reduction_server and use parameter_servers instead"
            )
    sizing = reducer_sizing(primary, workers, rs)
    if rs.replica_count == "auto":
        if sizing.needed is None:
            fail(
                "reduction_server.replica_count: 'auto' cannot size the reducers: no egress "
                f"bandwidth known for {_unknown_bandwidth_machine(primary, workers, rs)}; set replica_count"
            )
        return
    if sizing.needed is None or rs.replica_count >= sizing.needed:
        return
    got = rs.replica_count * (sizing.reducer_gbps or 0)
    text = (
        f"reduction_server.replica_count: {rs.replica_count} x {rs.machine_type} give "
        f"{got:g} Gbps, below the {sizing.training_gbps:g} Gbps of worker pools 0 and 1; "
        f"use {sizing.needed} or more"
    )
    if not rs.allow_undersized:
        fail(text + ", or set allow_undersized=True")
    LOGGER.warning("%s (allowed by allow_undersized=True)", text)


def _unknown_bandwidth_machine(primary: WorkerPool, workers: WorkerPool | None, rs: ReductionServer) -> str:
    if egress_gbps(rs.machine_type) is None:
        return f"reducer machine type {rs.machine_type}"
    for pool in (primary, workers):
        if pool is not None and machine_egress_gbps(pool.machine) is None:
            return f"machine type {pool.machine.machine_type}"
    return "a machine type"  # pragma: no cover - only called when one is unknown
