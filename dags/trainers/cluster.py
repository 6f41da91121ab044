"""Where a replica stands in its Vertex AI job: CLUSTER_SPEC parsing, ranks, output paths (stdlib only).

Vertex AI gives every replica ``CLUSTER_SPEC`` (JSON)::

    {"cluster": {"workerpool0": ["host:port"], "workerpool1": [...], ...},
     "environment": "cloud",
     "task": {"type": "workerpool1", "index": 0, "trial": "3"},
     "job": {...the CustomJobSpec...}}

Pool 0 is the primary, pool 1 the workers, pool 2 the parameter servers (or the Reduction Server),
pool 3 the evaluators. The *trainers* -- the replicas that compute gradients -- are the primary
(rank 0) and the workers (ranks 1..n, in pool order); parameter servers, reducers and evaluators are
not part of that world.

``AIP_MODEL_DIR`` and friends are ``gs://`` URIs (on Vertex AI and the emulator alike): the trainers
read and write them with google-cloud-storage (trainers.gcs).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "POOL_ROLES",
    "ClusterSpec",
    "ClusterSpecError",
    "DdpWorld",
    "ddp_world",
    "free_port",
    "split_address",
]

#: role of each worker pool position
POOL_ROLES = ("primary", "worker", "parameter_server", "evaluator")


class ClusterSpecError(ValueError):
    """CLUSTER_SPEC (or an address in it) is malformed; the message names the field and the rule."""


def split_address(address: str, *, field: str = "address") -> tuple[str, int]:
    """``"host:port"`` (or ``"[::1]:port"``) as ``(host, port)``."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not host:
        raise ClusterSpecError(f"{field}: must be 'host:port' (got {address!r})")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise ClusterSpecError(f"{field}: the port must be an integer (got {address!r})") from None
    if not 0 < port < 65536:
        raise ClusterSpecError(f"{field}: the port must be in 1..65535 (got {port})")
    return host, port


def free_port(host: str = "127.0.0.1") -> int:
    """A port that is free on ``host`` right now (for runs without CLUSTER_SPEC)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class ClusterSpec:
    """A parsed CLUSTER_SPEC: the pools' addresses and which replica this process is."""

    cluster: Mapping[str, tuple[str, ...]]
    pool: int
    index: int
    trial: str | None = None
    job: Mapping[str, Any] = field(default_factory=dict)

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def single(cls, address: str | None = None) -> ClusterSpec:
        """A one-replica cluster (a local run without CLUSTER_SPEC): the primary alone."""
        addr = address or f"127.0.0.1:{free_port()}"
        return cls(cluster={"workerpool0": (addr,)}, pool=0, index=0)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ClusterSpec:
        """From ``CLUSTER_SPEC``; a single-replica cluster on a free loopback port when it is unset."""
        env = os.environ if env is None else env
        text = env.get("CLUSTER_SPEC")
        if not text:
            return cls.single()
        return cls.parse(text)

    @classmethod
    def parse(cls, text: str | Mapping[str, Any]) -> ClusterSpec:
        """Parse and check a CLUSTER_SPEC (JSON text or the decoded dict)."""
        if isinstance(text, str):
            try:
                raw: Any = json.loads(text)
            except ValueError as exc:
                raise ClusterSpecError(f"CLUSTER_SPEC: not valid JSON ({exc})") from None
        else:
            raw = text
        if not isinstance(raw, Mapping):
            raise ClusterSpecError(f"CLUSTER_SPEC: must be a JSON object (got {type(raw).__name__})")
        cluster = _parse_cluster(raw.get("cluster"))
        pool, index = _parse_task(raw.get("task"), cluster)
        trial = raw["task"].get("trial")
        trial_id = None if trial is None else str(trial)
        return cls(cluster=cluster, pool=pool, index=index, trial=trial_id, job=_job(raw))

    # -- views ------------------------------------------------------------------------------

    @property
    def role(self) -> str:
        """``primary``, ``worker``, ``parameter_server`` or ``evaluator``."""
        return POOL_ROLES[self.pool]

    @property
    def key(self) -> str:
        """``workerpool1-0``: this replica's key (as in ``webAccessUris`` and logs)."""
        return f"workerpool{self.pool}-{self.index}"

    @property
    def address(self) -> str:
        """This replica's own ``host:port`` (the address it listens on, if it serves)."""
        return self.addresses(self.pool)[self.index]

    def addresses(self, pool: int) -> tuple[str, ...]:
        return tuple(self.cluster.get(f"workerpool{pool}", ()))

    @property
    def primary_address(self) -> str:
        return self.addresses(0)[0]

    @property
    def trainers(self) -> tuple[str, ...]:
        """Addresses of the gradient-computing replicas in rank order: the primary, then the workers."""
        return self.addresses(0) + self.addresses(1)

    @property
    def trainer_rank(self) -> int | None:
        """0 for the primary, 1..n for workers; None for parameter servers, reducers and evaluators."""
        if self.pool == 0:
            return 0
        if self.pool == 1:
            return 1 + self.index
        return None

    @property
    def parameter_servers(self) -> tuple[str, ...]:
        """Pool 2 addresses, unless pool 2 runs the Reduction Server (then there are none)."""
        return () if self.pool2_is_reduction_server else self.addresses(2)

    @property
    def pool2_is_reduction_server(self) -> bool:
        pools = self.job.get("worker_pool_specs") or self.job.get("workerPoolSpecs") or []
        if len(pools) < 3 or not isinstance(pools[2], Mapping):
            return False
        container = pools[2].get("container_spec") or pools[2].get("containerSpec") or {}
        image = str(container.get("image_uri") or container.get("imageUri") or "")
        return "/vertex-ai-restricted/training/reductionserver:" in image

    @property
    def base_output_uri(self) -> str | None:
        """``job.base_output_directory.output_uri_prefix`` (the ``gs://`` form), if any."""
        base = self.job.get("base_output_directory") or self.job.get("baseOutputDirectory") or {}
        if not isinstance(base, Mapping):
            return None
        uri = base.get("output_uri_prefix") or base.get("outputUriPrefix")
        return str(uri) if uri else None


def _pool_number(name: str) -> int | None:
    if name.startswith("workerpool") and name[len("workerpool") :] in ("0", "1", "2", "3"):
        return int(name[len("workerpool") :])
    return None


@dataclass(frozen=True)
class DdpWorld:
    """What ``torch.distributed.init_process_group`` needs for one trainer."""

    rank: int
    world_size: int
    master_addr: str
    master_port: int


def ddp_world(spec: ClusterSpec) -> DdpWorld:
    """Rank, world size and master address of a DDP trainer.

    The primary (workerpool0) is rank 0 and the master; workers (workerpool1) are ranks 1..n. The
    Reduction Server pool (workerpool2) and evaluators (workerpool3) are not part of the world.
    """
    rank = spec.trainer_rank
    if rank is None:
        raise ClusterSpecError(
            f"CLUSTER_SPEC.task.type: {spec.key} ({spec.role}) is not part of the DDP world; "
            "only workerpool0 (rank 0) and workerpool1 (ranks 1..n) train"
        )
    host, port = split_address(spec.primary_address, field="CLUSTER_SPEC.cluster.workerpool0[0]")
    return DdpWorld(rank=rank, world_size=len(spec.trainers), master_addr=host, master_port=port)


def _parse_cluster(clusters: Any) -> dict[str, tuple[str, ...]]:
    """CLUSTER_SPEC.cluster: pool name -> addresses, checked (one primary address)."""
    if not isinstance(clusters, Mapping):
        raise ClusterSpecError("CLUSTER_SPEC.cluster: required, an object of pool name -> addresses")
    cluster: dict[str, tuple[str, ...]] = {}
    for name, addrs in clusters.items():
        where = f"CLUSTER_SPEC.cluster.{name}"
        if _pool_number(str(name)) is None:
            raise ClusterSpecError(f"{where}: pool names are workerpool0..workerpool3")
        if not isinstance(addrs, list) or not all(isinstance(a, str) for a in addrs):
            raise ClusterSpecError(f"{where}: must be a list of 'host:port' strings")
        for i, addr in enumerate(addrs):
            split_address(addr, field=f"{where}[{i}]")
        cluster[str(name)] = tuple(addrs)
    if len(cluster.get("workerpool0", ())) != 1:
        raise ClusterSpecError(
            "CLUSTER_SPEC.cluster.workerpool0: the primary pool must have exactly 1 address "
            f"(got {len(cluster.get('workerpool0', ()))})"
        )
    return cluster


def _parse_task(task: Any, cluster: Mapping[str, tuple[str, ...]]) -> tuple[int, int]:
    """CLUSTER_SPEC.task: this replica's pool number and index in it, checked against the cluster."""
    if not isinstance(task, Mapping):
        raise ClusterSpecError("CLUSTER_SPEC.task: required, an object with type and index")
    pool = _pool_number(str(task.get("type", "")))
    if pool is None:
        raise ClusterSpecError(
            f"CLUSTER_SPEC.task.type: must be workerpool0..workerpool3 (got {task.get('type')!r})"
        )
    index = task.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        raise ClusterSpecError(f"CLUSTER_SPEC.task.index: must be an integer (got {index!r})")
    size = len(cluster.get(f"workerpool{pool}", ()))
    if not 0 <= index < size:
        raise ClusterSpecError(
            f"CLUSTER_SPEC.task.index: {index} is out of range for workerpool{pool} ({size} replicas)"
        )
    return pool, index


def _job(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """CLUSTER_SPEC.job, the job's spec: an object, or {} when it is missing or unreadable."""
    job = raw.get("job") or {}
    if isinstance(job, str):  # some real jobs carry the spec as a JSON string
        try:
            job = json.loads(job)
        except ValueError:
            job = {}
    return job if isinstance(job, Mapping) else {}
