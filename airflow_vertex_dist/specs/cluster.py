"""Pools: a group of identical replicas (v1 ``WorkerPoolSpec``) with its file-system mounts, the
Reduction Server pool and its images, and the role of each pool position."""

# No ``from __future__ import annotations`` in the modules that define spec models, unlike the rest of
# the package: with it, pydantic compiles and evaluates every field's annotation string when the model
# classes are created, on every DAG parse -- about a fifth of this package's parse cost (some 20 M of
# 115 M instructions for the benchmark's DAG file). Forward references are quoted instead.

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from typing_extensions import Self  # typing.Self is Python 3.11+; the package supports 3.10

from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.specs._base import SpecModel, fail
from airflow_vertex_dist.specs._catalog_rules import default_boot_disk_type, machine_type_rule
from airflow_vertex_dist.specs._checks import nonblank
from airflow_vertex_dist.specs.machine import (
    GPU_MACHINE_FAMILIES,
    MACHINE_TYPE_RE,
    TPU_MACHINE_RE,
    Disk,
    Machine,
    ReservationAffinity,
    check_disk,
)
from airflow_vertex_dist.specs.task import Container, PythonPackage

__all__ = [
    "POOL_ROLES",
    "REDUCTION_SERVER_IMAGES",
    "LustreMount",
    "NfsMount",
    "ReductionServer",
    "WorkerPool",
    "is_reduction_server_image",
    "reduction_server_image",
]

#: Role of each ``workerPoolSpecs`` position.
POOL_ROLES: tuple[str, ...] = ("primary", "workers", "parameter_servers", "evaluators")

#: The Reduction Server images, by multi-region.
REDUCTION_SERVER_IMAGES: dict[str, str] = {
    region: f"{region}-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    for region in ("us", "europe", "asia")
}
_RS_IMAGE_RE = LazyRegex(
    r"^(us|europe|asia)-docker\.pkg\.dev/vertex-ai-restricted/training/reductionserver(:[\w][\w.-]{0,127}"
    r"|@sha256:[0-9a-f]{64})$"
)


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


class NfsMount(SpecModel):
    """An NFS share mounted at ``/mnt/nfs/<mount_point>`` on every replica."""

    server: str
    path: str
    mount_point: str

    @model_validator(mode="after")
    def _check(self) -> Self:
        nonblank("server", self.server)
        if not self.path.startswith("/"):
            fail(
                f"path: NFS export path must start with '/' (got {self.path!r}); give the absolute export "
                "path"
            )
        nonblank("mount_point", self.mount_point)
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
            nonblank(name, getattr(self, name))
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

    @model_validator(mode="before")
    @classmethod
    def _series_disk(cls, data: Any) -> Any:
        """A pool that sets no boot disk type gets its machine series' default (hyperdisk-balanced on
        A3 Ultra and A4, which take nothing else; pd-ssd elsewhere), as the service does."""
        if not isinstance(data, dict):
            return data
        machine = data.get("machine")
        if isinstance(machine, dict):
            machine_type = machine.get("machine_type")
        else:
            machine_type = getattr(machine, "machine_type", None)
        if not isinstance(machine_type, str):
            return data
        disk = data.get("disk")
        if disk is None:
            return {**data, "disk": {"boot_disk_type": default_boot_disk_type(machine_type)}}
        if isinstance(disk, dict) and disk.get("boot_disk_type") in (None, ""):
            return {**data, "disk": {**disk, "boot_disk_type": default_boot_disk_type(machine_type)}}
        return data

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
                f"(got {'both' if self.container is not None else 'neither'}); set container=Container(...) "
                "or python_package=PythonPackage(...)"
            )
        check_disk(self.machine.machine_type, self.disk)
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
    pools 0 and 1 (see ``airflow_vertex_dist.specs.bandwidth``). An explicit count below that
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
                    f"(got {acc or 'accelerator'} x{count if count is not None else '?'}); drop the "
                    "accelerator and use a CPU machine such as n1-highcpu-16"
                )
            used = [k for k in ("command", "args", "env") if data.get(k)]
            if used:
                fail(
                    "reduction_server: the Reduction Server image takes no command, args or env "
                    f"(got {', '.join(used)}); remove them"
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
        if not MACHINE_TYPE_RE.match(value):
            fail(f"machine_type: must look like 'n1-highcpu-16' (got {value!r})")
        if value.startswith(GPU_MACHINE_FAMILIES) or value == "cloud-tpu" or TPU_MACHINE_RE.match(value):
            fail(
                f"machine_type: reducers must not have accelerators (got accelerator machine {value}); use "
                "n1-highcpu-16, or an N2 machine with 16 or more vCPUs"
            )
        rule = machine_type_rule(value)
        if rule is not None:
            fail(rule)
        return value

    @model_validator(mode="after")
    def _disk(self) -> Self:
        check_disk(self.machine_type, self.disk)
        return self

    @field_validator("image_uri")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        if value is not None and not is_reduction_server_image(value):
            fail(
                "image_uri: must be a Reduction Server image "
                "({us,europe,asia}-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:TAG) "
                f"(got {value!r}); or leave image_uri unset for the image nearest the job's location"
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
