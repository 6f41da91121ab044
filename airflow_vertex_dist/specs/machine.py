"""Machines: the machine type and accelerators of a pool's replicas (v1 ``MachineSpec``), their
reservation affinity, and their boot disk (v1 ``DiskSpec``)."""

# No ``from __future__ import annotations`` in the modules that define spec models, unlike the rest of
# the package: with it, pydantic compiles and evaluates every field's annotation string when the model
# classes are created, on every DAG parse -- about a fifth of this package's parse cost (some 20 M of
# 115 M instructions for the benchmark's DAG file). Forward references are quoted instead.

import re
from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator
from typing_extensions import Self  # typing.Self is Python 3.11+; the package supports 3.10

from airflow_vertex_dist._generated import catalog
from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.specs._base import SpecModel, fail
from airflow_vertex_dist.specs._catalog_rules import (
    boot_disk_type_rule,
    cloud_tpu_counts,
    disk_rule,
    machine_rule,
    topology_rule,
)

__all__ = [
    "ACCELERATOR_TYPES",
    "GPU_MACHINE_FAMILIES",
    "GPU_TYPES",
    "MACHINE_TYPE_RE",
    "TPU_MACHINE_RE",
    "TPU_TYPES",
    "Disk",
    "Machine",
    "ReservationAffinity",
    "check_disk",
]

AcceleratorType = Literal[
    "NVIDIA_TESLA_K80",
    "NVIDIA_TESLA_P100",
    "NVIDIA_TESLA_V100",
    "NVIDIA_TESLA_P4",
    "NVIDIA_TESLA_T4",
    "NVIDIA_TESLA_A100",
    "NVIDIA_A100_80GB",
    "NVIDIA_L4",
    "NVIDIA_H100_80GB",
    "NVIDIA_H100_MEGA_80GB",
    "NVIDIA_H200_141GB",
    "NVIDIA_B200",
    "NVIDIA_GB200",
    "NVIDIA_RTX_PRO_6000",
    "TPU_V2",
    "TPU_V3",
    "TPU_V4_POD",
    "TPU_V5_LITEPOD",
]
#: Every ``AcceleratorType`` name of the v1 proto except ACCELERATOR_TYPE_UNSPECIFIED (the machine
#: catalog's accelerators: ``tests/test_catalog.py`` holds the two equal).
ACCELERATOR_TYPES: tuple[str, ...] = get_args(AcceleratorType)
GPU_TYPES: tuple[str, ...] = tuple(t for t in ACCELERATOR_TYPES if t.startswith("NVIDIA_"))
TPU_TYPES: tuple[str, ...] = tuple(t for t in ACCELERATOR_TYPES if t.startswith("TPU_"))

MACHINE_TYPE_RE = LazyRegex(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$")
TPU_MACHINE_RE = LazyRegex(r"^(ct\d|tpu)")
_TOPOLOGY_RE = LazyRegex(r"^\d+x\d+(x\d+)?$")
#: machine families that come with GPUs attached (no accelerator_type needed)
GPU_MACHINE_FAMILIES = ("a2-", "a3-", "a4-", "a4x-", "g2-", "g4-")


class ReservationAffinity(SpecModel):
    """How a pool consumes Compute Engine reservations."""

    reservation_affinity_type: Literal["NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION"]
    key: str | None = None
    values: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.reservation_affinity_type == "SPECIFIC_RESERVATION":
            if not self.key or not self.values:
                fail(
                    "reservation_affinity: SPECIFIC_RESERVATION needs both key and values; set both, or use "
                    "ANY_RESERVATION or NO_RESERVATION"
                )
        elif self.key is not None or self.values:
            fail(
                f"reservation_affinity: key and values are only allowed with SPECIFIC_RESERVATION "
                f"(got {self.reservation_affinity_type}); drop them, or use SPECIFIC_RESERVATION"
            )
        return self

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reservationAffinityType": self.reservation_affinity_type}
        if self.key is not None:
            out["key"] = self.key
        if self.values:
            out["values"] = list(self.values)
        return out


class Machine(SpecModel):
    """One VM: machine type and optional accelerators (v1 ``MachineSpec``).

    The machine catalog (``airflow_vertex_dist.specs.catalog``, with the source of each figure) decides
    which machine types exist for custom training, which accelerators each takes and in what counts: an
    N1 machine takes the GPUs its vCPUs and memory allow; an A2, A3, A4 or G2 machine comes with its own
    GPUs, which the request names (``a2-highgpu-1g`` with ``NVIDIA_TESLA_A100`` x1).
    """

    machine_type: str
    accelerator_type: AcceleratorType | None = None
    accelerator_count: int = Field(default=0, ge=0, le=2**31 - 1)
    tpu_topology: str | None = None
    gpu_partition_size: str | None = None
    reservation_affinity: ReservationAffinity | None = None

    @field_validator("machine_type")
    @classmethod
    def _machine_type(cls, value: str) -> str:
        if not MACHINE_TYPE_RE.match(value):
            fail(
                f"machine_type: must look like 'n1-standard-4' (lowercase family-shape words "
                f"joined by '-') (got {value!r})"
            )
        return value

    @model_validator(mode="after")
    def _check(self) -> Self:
        acc, count = self.accelerator_type, self.accelerator_count
        if acc is None and count:
            fail(f"accelerator_count: set accelerator_type too, or use 0 (got {count})")
        if acc is not None and count < 1:
            fail(
                f"accelerator_count: must be at least 1 when accelerator_type is {acc}; set it, or drop "
                "accelerator_type"
            )
        if acc in catalog.CLOUD_TPU_COUNTS and self.machine_type != "cloud-tpu":
            fail(
                f"accelerator_type: {acc} runs on machine_type 'cloud-tpu' with accelerator_count "
                f"{cloud_tpu_counts(acc)} (got {self.machine_type} x{count}); set machine_type='cloud-tpu'"
            )
        if acc in GPU_TYPES and self.is_tpu_machine:
            fail(
                f"accelerator_type: TPU machine type {self.machine_type} cannot take GPU {acc}; use a GPU "
                "machine type (n1-, a2-, a3-, g2-...) for it, or drop accelerator_type"
            )
        if self.tpu_topology is not None:
            if not _TOPOLOGY_RE.match(self.tpu_topology):
                fail(f"tpu_topology: must look like '2x2' or '2x2x1' (got {self.tpu_topology!r})")
            if not self.is_tpu:
                fail(
                    f"tpu_topology: only for TPU machines (got machine_type {self.machine_type}, "
                    f"accelerator_type {acc}); drop tpu_topology, or use a TPU machine type"
                )
            topology = topology_rule(self.machine_type, self.tpu_topology)
            if topology is not None:
                fail(topology)
        if self.gpu_partition_size is not None:
            if acc not in GPU_TYPES:
                fail(
                    f"gpu_partition_size: needs a GPU accelerator_type (got {acc}); set one, or drop "
                    "gpu_partition_size"
                )
            if count != 1:
                fail(f"gpu_partition_size: needs accelerator_count 1 (got {count}); set accelerator_count=1")
            if not re.match(r"^\d+g\.\d+gb$", self.gpu_partition_size):
                fail(f"gpu_partition_size: must look like '1g.10gb' (got {self.gpu_partition_size!r})")
        rule = machine_rule(self.machine_type, acc, count)
        if rule is not None:
            fail(rule)
        return self

    @property
    def is_tpu_machine(self) -> bool:
        return self.machine_type == "cloud-tpu" or bool(TPU_MACHINE_RE.match(self.machine_type))

    @property
    def is_tpu(self) -> bool:
        """Whether this machine runs TPUs (a TPU accelerator or a TPU machine type)."""
        return self.accelerator_type in TPU_TYPES or self.is_tpu_machine

    @property
    def has_gpu(self) -> bool:
        """Whether this machine has GPUs (attached, or built into an A/G-series machine type)."""
        if self.accelerator_type in GPU_TYPES:
            return True
        return self.accelerator_type is None and self.machine_type.startswith(GPU_MACHINE_FAMILIES)

    def describe_accelerators(self) -> str:
        if self.accelerator_type is None:
            return "-"
        return f"{self.accelerator_count} x {self.accelerator_type}"

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"machineType": self.machine_type}
        if self.accelerator_type is not None:
            out["acceleratorType"] = self.accelerator_type
            out["acceleratorCount"] = self.accelerator_count
        if self.gpu_partition_size is not None:
            out["gpuPartitionSize"] = self.gpu_partition_size
        if self.tpu_topology is not None:
            out["tpuTopology"] = self.tpu_topology
        if self.reservation_affinity is not None:
            out["reservationAffinity"] = self.reservation_affinity.to_api()
        return out


class Disk(SpecModel):
    """Boot disk of every replica of a pool (v1 ``DiskSpec``): ``pd-ssd``, ``pd-standard`` or
    ``hyperdisk-balanced`` (the only valid values, per the v1 ``DiskSpec``); the pool's machine series must
    take the type (``hyperdisk-balanced`` only on A3, A4, M1 and TPU VMs; A3 Ultra and A4 take nothing
    else), which the pool checks (``check_disk``)."""

    boot_disk_type: Literal["pd-ssd", "pd-standard", "hyperdisk-balanced"] = "pd-ssd"
    boot_disk_size_gb: int = 100

    @field_validator("boot_disk_type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> Any:
        rule = boot_disk_type_rule(value) if isinstance(value, str) else None
        if rule is not None:
            fail(rule)
        return value

    @field_validator("boot_disk_size_gb")
    @classmethod
    def _size(cls, value: int) -> int:
        if not 100 <= value <= 64000:
            fail(f"boot_disk_size_gb: must be within [100, 64000] (got {value})")
        return value

    def to_api(self) -> dict[str, Any]:
        return {"bootDiskType": self.boot_disk_type, "bootDiskSizeGb": self.boot_disk_size_gb}


def check_disk(machine_type: str, disk: Disk) -> None:
    """Fail when the machine type's series does not take the disk's boot disk type (a pool's rule)."""
    rule = disk_rule(machine_type, disk.boot_disk_type)
    if rule is not None:
        fail(rule)
