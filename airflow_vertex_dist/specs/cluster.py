"""Cluster building blocks: machines, disks, tasks (container or python package), worker pools,
the Reduction Server pool and scheduling options, with their v1 REST renderings."""

# No ``from __future__ import annotations`` in the modules that define spec models, unlike the rest of
# the package: with it, pydantic compiles and evaluates every field's annotation string when the model
# classes are created, on every DAG parse -- about a fifth of this package's parse cost (some 20 M of
# 115 M instructions for the benchmark's DAG file). Forward references are quoted instead.

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Literal, get_args

from pydantic import Field, ValidationInfo, field_validator, model_validator
from typing_extensions import Self  # typing.Self is Python 3.11+; the package supports 3.10

from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.specs._base import Duration, SpecModel, duration_to_api, fail

__all__ = [
    "ACCELERATOR_TYPES",
    "GPU_TYPES",
    "REDUCTION_SERVER_IMAGES",
    "TPU_TYPES",
    "Container",
    "Disk",
    "DnsPeeringConfig",
    "LustreMount",
    "Machine",
    "NfsMount",
    "PscInterfaceConfig",
    "PythonPackage",
    "ReductionServer",
    "ReservationAffinity",
    "Scheduling",
    "WorkerPool",
    "is_reduction_server_image",
    "reduction_server_image",
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
#: Every ``AcceleratorType`` name of the v1 proto except ACCELERATOR_TYPE_UNSPECIFIED.
ACCELERATOR_TYPES: tuple[str, ...] = get_args(AcceleratorType)
GPU_TYPES: tuple[str, ...] = tuple(t for t in ACCELERATOR_TYPES if t.startswith("NVIDIA_"))
TPU_TYPES: tuple[str, ...] = tuple(t for t in ACCELERATOR_TYPES if t.startswith("TPU_"))

#: The Reduction Server images, by multi-region.
REDUCTION_SERVER_IMAGES: dict[str, str] = {
    region: f"{region}-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    for region in ("us", "europe", "asia")
}
_RS_IMAGE_RE = LazyRegex(
    r"^(us|europe|asia)-docker\.pkg\.dev/vertex-ai-restricted/training/reductionserver(:[\w][\w.-]{0,127}"
    r"|@sha256:[0-9a-f]{64})$"
)
_MACHINE_TYPE_RE = LazyRegex(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$")
_TPU_MACHINE_RE = LazyRegex(r"^(ct\d|tpu)")
_TOPOLOGY_RE = LazyRegex(r"^\d+x\d+(x\d+)?$")
_ENV_NAME_RE = LazyRegex(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODULE_RE = LazyRegex(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_GPU_MACHINE_FAMILIES = ("a2-", "a3-", "a4-", "a4x-", "g2-", "g4-")


def is_reduction_server_image(uri: str) -> bool:
    """True for any tag or digest of the three ``*-docker.pkg.dev/vertex-ai-restricted/...``
    Reduction Server images."""
    # Most images are trainers': the substring test spares compiling the pattern in a DAG parse.
    return "/vertex-ai-restricted/training/reductionserver" in uri and bool(_RS_IMAGE_RE.match(uri))


def reduction_server_image(location: str | None) -> str:
    """The Reduction Server image of the multi-region nearest to ``location``.

    Europe, the Middle East and Africa use ``europe-``; Asia and Australia use ``asia-``;
    everything else (the Americas, or no location) uses ``us-``.
    """
    loc = (location or "").lower()
    if loc.startswith(("europe-", "me-", "africa-")):
        return REDUCTION_SERVER_IMAGES["europe"]
    if loc.startswith(("asia-", "australia-")):
        return REDUCTION_SERVER_IMAGES["asia"]
    return REDUCTION_SERVER_IMAGES["us"]


def _nonblank(field: str, value: str) -> str:
    if not value.strip():
        fail(f"{field}: must not be empty")
    if value != value.strip() or any(c.isspace() for c in value):
        fail(f"{field}: must not contain whitespace (got {value!r})")
    return value


class ReservationAffinity(SpecModel):
    """How a pool consumes Compute Engine reservations."""

    reservation_affinity_type: Literal["NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION"]
    key: str | None = None
    values: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.reservation_affinity_type == "SPECIFIC_RESERVATION":
            if not self.key or not self.values:
                fail("reservation_affinity: SPECIFIC_RESERVATION needs both key and values")
        elif self.key is not None or self.values:
            fail(
                f"reservation_affinity: key and values are only allowed with SPECIFIC_RESERVATION "
                f"(got {self.reservation_affinity_type})"
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
    """One VM: machine type and optional accelerators (v1 ``MachineSpec``)."""

    machine_type: str
    accelerator_type: AcceleratorType | None = None
    accelerator_count: int = Field(default=0, ge=0, le=2**31 - 1)
    tpu_topology: str | None = None
    gpu_partition_size: str | None = None
    reservation_affinity: ReservationAffinity | None = None

    @field_validator("machine_type")
    @classmethod
    def _machine_type(cls, value: str) -> str:
        if not _MACHINE_TYPE_RE.match(value):
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
            fail(f"accelerator_count: must be at least 1 when accelerator_type is {acc}")
        if acc in GPU_TYPES and count not in (1, 2, 4, 8, 16):
            fail(f"accelerator_count: a machine takes 1, 2, 4, 8 or 16 GPUs (got {acc} x{count})")
        if acc in ("TPU_V2", "TPU_V3"):
            if self.machine_type != "cloud-tpu" or count != 8:
                fail(
                    f"accelerator_type: {acc} runs on machine_type 'cloud-tpu' with accelerator_count 8 "
                    f"(got {self.machine_type} x{count})"
                )
        if acc in GPU_TYPES and self.is_tpu_machine:
            fail(f"accelerator_type: TPU machine type {self.machine_type} cannot take GPU {acc}")
        if self.tpu_topology is not None:
            if not _TOPOLOGY_RE.match(self.tpu_topology):
                fail(f"tpu_topology: must look like '2x2' or '2x2x1' (got {self.tpu_topology!r})")
            if not self.is_tpu:
                fail(
                    f"tpu_topology: only for TPU machines (got machine_type {self.machine_type}, "
                    f"accelerator_type {acc})"
                )
        if self.gpu_partition_size is not None:
            if acc not in GPU_TYPES:
                fail(f"gpu_partition_size: needs a GPU accelerator_type (got {acc})")
            if count != 1:
                fail(f"gpu_partition_size: needs accelerator_count 1 (got {count})")
            if not re.match(r"^\d+g\.\d+gb$", self.gpu_partition_size):
                fail(f"gpu_partition_size: must look like '1g.10gb' (got {self.gpu_partition_size!r})")
        return self

    @property
    def is_tpu_machine(self) -> bool:
        return self.machine_type == "cloud-tpu" or bool(_TPU_MACHINE_RE.match(self.machine_type))

    @property
    def is_tpu(self) -> bool:
        """Whether this machine runs TPUs (a TPU accelerator or a TPU machine type)."""
        return self.accelerator_type in TPU_TYPES or self.is_tpu_machine

    @property
    def has_gpu(self) -> bool:
        """Whether this machine has GPUs (attached, or built into an A/G-series machine type)."""
        if self.accelerator_type in GPU_TYPES:
            return True
        return self.accelerator_type is None and self.machine_type.startswith(_GPU_MACHINE_FAMILIES)

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
    """Boot disk of every replica of a pool (v1 ``DiskSpec``)."""

    boot_disk_type: Literal["pd-ssd", "pd-standard", "pd-balanced", "hyperdisk-balanced"] = "pd-ssd"
    boot_disk_size_gb: int = 100

    @field_validator("boot_disk_size_gb")
    @classmethod
    def _size(cls, value: int) -> int:
        if not 100 <= value <= 64000:
            fail(f"boot_disk_size_gb: must be within [100, 64000] (got {value})")
        return value

    def to_api(self) -> dict[str, Any]:
        return {"bootDiskType": self.boot_disk_type, "bootDiskSizeGb": self.boot_disk_size_gb}


def _check_env(env: Mapping[str, str]) -> None:
    if len(env) > 100:
        fail(f"env: at most 100 variables are allowed (got {len(env)})")
    for name, value in env.items():
        if not _ENV_NAME_RE.match(name):
            fail(f"env: variable name must be a C identifier ([A-Za-z_][A-Za-z0-9_]*) (got {name!r})")
        if value == "":
            fail(f"env: {name}: the value is required (the v1 EnvVar reference marks it Required)")


def _env_to_api(env: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in env.items()]


class Container(SpecModel):
    """A custom container task (v1 ``ContainerSpec``). ``env`` keeps its order: a value may refer
    to an earlier variable as ``$(NAME)``."""

    image_uri: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("image_uri")
    @classmethod
    def _image(cls, value: str) -> str:
        return _nonblank("image_uri", value)

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        _check_env(value)
        return value

    @property
    def label(self) -> str:
        return self.image_uri

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"imageUri": self.image_uri}
        if self.command:
            out["command"] = list(self.command)
        if self.args:
            out["args"] = list(self.args)
        if self.env:
            out["env"] = _env_to_api(self.env)
        return out


class PythonPackage(SpecModel):
    """A Python package task run by a prebuilt executor image (v1 ``PythonPackageSpec``)."""

    executor_image_uri: str
    package_uris: tuple[str, ...]
    python_module: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("executor_image_uri")
    @classmethod
    def _image(cls, value: str) -> str:
        return _nonblank("executor_image_uri", value)

    @field_validator("package_uris")
    @classmethod
    def _uris(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            fail("package_uris: at least one package URI is required")
        if len(value) > 100:
            fail(f"package_uris: at most 100 package URIs are allowed (got {len(value)})")
        for uri in value:
            _nonblank("package_uris", uri)
        return value

    @field_validator("python_module")
    @classmethod
    def _module(cls, value: str) -> str:
        if not _MODULE_RE.match(value):
            fail(f"python_module: must be a dotted Python module name (got {value!r})")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        _check_env(value)
        return value

    @property
    def label(self) -> str:
        return f"{self.python_module} @ {self.executor_image_uri}"

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "executorImageUri": self.executor_image_uri,
            "packageUris": list(self.package_uris),
            "pythonModule": self.python_module,
        }
        if self.args:
            out["args"] = list(self.args)
        if self.env:
            out["env"] = _env_to_api(self.env)
        return out


class NfsMount(SpecModel):
    """An NFS share mounted at ``/mnt/nfs/<mount_point>`` on every replica."""

    server: str
    path: str
    mount_point: str

    @model_validator(mode="after")
    def _check(self) -> Self:
        _nonblank("server", self.server)
        if not self.path.startswith("/"):
            fail(f"path: NFS export path must start with '/' (got {self.path!r})")
        _nonblank("mount_point", self.mount_point)
        return self

    def to_api(self) -> dict[str, Any]:
        return {"server": self.server, "path": self.path, "mountPoint": self.mount_point}


class LustreMount(SpecModel):
    """A Lustre file system mounted at ``/mnt/lustre/<mount_point>`` on every replica."""

    instance_ip: str
    volume_handle: str
    filesystem: str
    mount_point: str

    @model_validator(mode="after")
    def _check(self) -> Self:
        for name in ("instance_ip", "volume_handle", "filesystem", "mount_point"):
            _nonblank(name, getattr(self, name))
        return self

    def to_api(self) -> dict[str, Any]:
        return {
            "instanceIp": self.instance_ip,
            "volumeHandle": self.volume_handle,
            "filesystem": self.filesystem,
            "mountPoint": self.mount_point,
        }


class WorkerPool(SpecModel):
    """A group of identical replicas (v1 ``WorkerPoolSpec``): exactly one of ``container`` or
    ``python_package``."""

    machine: Machine
    replica_count: int = Field(default=1, le=2**31 - 1)
    disk: Disk = Field(default_factory=Disk)
    container: Container | None = None
    python_package: PythonPackage | None = None
    nfs_mounts: tuple[NfsMount, ...] = ()
    lustre_mounts: tuple[LustreMount, ...] = ()

    @field_validator("replica_count")
    @classmethod
    def _count(cls, value: int) -> int:
        if value < 1:
            fail(
                f"replica_count: a worker pool in use needs at least 1 replica (got {value}; an omitted "
                "replicaCount is 0 in a v1 request; leave a pool out, or send it as {}, to skip it)"
            )
        return value

    @model_validator(mode="after")
    def _one_task(self) -> Self:
        if (self.container is None) == (self.python_package is None):
            fail(
                "container/python_package: exactly one of container or python_package is required "
                f"(got {'both' if self.container is not None else 'neither'})"
            )
        return self

    @classmethod
    def like(cls, other: "WorkerPool", replica_count: int | None = None, **overrides: Any) -> "WorkerPool":
        """A pool shaped like ``other`` (machine, disk, task, mounts), with ``replica_count`` and
        any other field replaced; the result is validated like any pool."""
        data: dict[str, Any] = {name: getattr(other, name) for name in type(other).model_fields}
        if replica_count is not None:
            data["replica_count"] = replica_count
        data.update(overrides)
        return cls.model_validate(data)

    @property
    def task_label(self) -> str:
        task = self.container if self.container is not None else self.python_package
        return task.label if task is not None else "-"

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "machineSpec": self.machine.to_api(),
            "replicaCount": self.replica_count,
            "diskSpec": self.disk.to_api(),
        }
        if self.container is not None:
            out["containerSpec"] = self.container.to_api()
        if self.python_package is not None:
            out["pythonPackageSpec"] = self.python_package.to_api()
        if self.nfs_mounts:
            out["nfsMounts"] = [m.to_api() for m in self.nfs_mounts]
        if self.lustre_mounts:
            out["lustreMounts"] = [m.to_api() for m in self.lustre_mounts]
        return out


class ReductionServer(SpecModel):
    """The Reduction Server pool (always worker pool 2).

    ``replica_count="auto"`` sizes the pool so that the reducers' total egress bandwidth matches
    pools 0 and 1 (see :mod:`airflow_vertex_dist.specs.bandwidth`). An explicit count below that
    is an error unless ``allow_undersized=True``, which logs a warning instead. ``image_uri``
    defaults to the multi-region image nearest the job's location.
    """

    replica_count: int | Literal["auto"] = "auto"
    machine_type: str = "n1-highcpu-16"
    allow_undersized: bool = False
    image_uri: str | None = None
    disk: Disk = Field(default_factory=Disk)
    reservation_affinity: ReservationAffinity | None = None

    @model_validator(mode="before")
    @classmethod
    def _refused_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            acc, count = data.get("accelerator_type"), data.get("accelerator_count")
            if acc not in (None, "") or count not in (None, 0):
                fail(
                    "reduction_server: reducers must not have accelerators "
                    f"(got {acc or 'accelerator'} x{count if count is not None else '?'})"
                )
            used = [k for k in ("command", "args", "env") if data.get(k)]
            if used:
                fail(
                    "reduction_server: the Reduction Server image takes no command, args or env "
                    f"(got {', '.join(used)})"
                )
        return data

    @field_validator("replica_count")
    @classmethod
    def _count(cls, value: int | str) -> int | str:
        if isinstance(value, int) and not 1 <= value <= 2**31 - 1:
            fail(f"replica_count: must be at least 1, or 'auto' (got {value})")
        return value

    @field_validator("machine_type")
    @classmethod
    def _machine_type(cls, value: str) -> str:
        if not _MACHINE_TYPE_RE.match(value):
            fail(f"machine_type: must look like 'n1-highcpu-16' (got {value!r})")
        if value.startswith(_GPU_MACHINE_FAMILIES) or value == "cloud-tpu" or _TPU_MACHINE_RE.match(value):
            fail(f"machine_type: reducers must not have accelerators (got accelerator machine {value})")
        return value

    @field_validator("image_uri")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        if value is not None and not is_reduction_server_image(value):
            fail(
                "image_uri: must be a Reduction Server image "
                "({us,europe,asia}-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:TAG) "
                f"(got {value!r})"
            )
        return value

    @property
    def machine(self) -> Machine:
        return Machine(machine_type=self.machine_type, reservation_affinity=self.reservation_affinity)

    def image_for(self, location: str | None) -> str:
        return self.image_uri or reduction_server_image(location)

    def to_api(self, replica_count: int, location: str | None) -> dict[str, Any]:
        return {
            "machineSpec": self.machine.to_api(),
            "replicaCount": replica_count,
            "diskSpec": self.disk.to_api(),
            "containerSpec": {"imageUri": self.image_for(location)},
        }


class Scheduling(SpecModel):
    """Queuing and scheduling options (v1 ``Scheduling``).

    ``strategy``: STANDARD, SPOT or FLEX_START (the deprecated ON_DEMAND and LOW_COST are
    refused in specs, but accepted by ``from_api`` as the service does). ``max_wait_duration``
    only applies to FLEX_START (``0`` waits indefinitely); ``from_api`` takes it with any strategy,
    as the service does, and a spec written in Python may set a non-zero one only with FLEX_START.
    """

    timeout: Duration | None = None
    restart_job_on_worker_restart: bool = False
    strategy: Literal["STANDARD", "SPOT", "FLEX_START", "ON_DEMAND", "LOW_COST"] | None = None
    disable_retries: bool = False
    max_wait_duration: Duration | None = None

    @field_validator("strategy")
    @classmethod
    def _deprecated(cls, value: str | None, info: ValidationInfo) -> str | None:
        # The service still takes the deprecated values (from_api validates with server=True).
        server = isinstance(info.context, dict) and bool(info.context.get("server"))
        if value in ("ON_DEMAND", "LOW_COST") and not server:
            fail(f"strategy: {value} is deprecated; use STANDARD or SPOT")
        return value

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> Self:
        if self.timeout is not None and self.timeout <= timedelta(0):
            fail(f"timeout: must be positive (got {duration_to_api(self.timeout)})")
        if self.max_wait_duration is not None:
            if self.max_wait_duration < timedelta(0):
                fail(
                    f"max_wait_duration: must not be negative (got {duration_to_api(self.max_wait_duration)})"
                )
            # The service takes it with any strategy and applies it only to FLEX_START ("0s" means wait
            # indefinitely); a spec written in Python is told when a non-zero wait would do nothing.
            server = isinstance(info.context, dict) and bool(info.context.get("server"))
            if self.strategy != "FLEX_START" and self.max_wait_duration and not server:
                fail(f"max_wait_duration: only applies to strategy FLEX_START (got {self.strategy})")
        return self

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.timeout is not None:
            out["timeout"] = duration_to_api(self.timeout)
        if self.restart_job_on_worker_restart:
            out["restartJobOnWorkerRestart"] = True
        if self.strategy is not None:
            out["strategy"] = self.strategy
        if self.disable_retries:
            out["disableRetries"] = True
        if self.max_wait_duration is not None:
            out["maxWaitDuration"] = duration_to_api(self.max_wait_duration)
        return out


class DnsPeeringConfig(SpecModel):
    domain: str
    target_project: str
    target_network: str

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.domain.endswith("."):
            fail(f"domain: DNS name suffix must end with a dot (got {self.domain!r})")
        _nonblank("target_project", self.target_project)
        _nonblank("target_network", self.target_network)
        return self

    def to_api(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "targetProject": self.target_project,
            "targetNetwork": self.target_network,
        }


class PscInterfaceConfig(SpecModel):
    """Private Service Connect interface (PSC-I) configuration."""

    network_attachment: str | None = None
    dns_peering_configs: tuple[DnsPeeringConfig, ...] = ()

    @field_validator("network_attachment")
    @classmethod
    def _attachment(cls, value: str | None) -> str | None:
        return None if value is None else _nonblank("network_attachment", value)

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.network_attachment is not None:
            out["networkAttachment"] = self.network_attachment
        if self.dns_peering_configs:
            out["dnsPeeringConfigs"] = [d.to_api() for d in self.dns_peering_configs]
        return out
