"""Settings shared by the emulator's API side and its runner (the contract between the two)."""

from __future__ import annotations

import ipaddress
import threading
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "GCS_MOUNT_MODES",
    "BindError",
    "Capacity",
    "EmulatorConfig",
    "Faults",
    "check_exposure",
    "check_gcs_mount",
    "is_loopback_host",
]

#: the values of ``EmulatorConfig.gcs_mount`` (``--gcs-mount``)
GCS_MOUNT_MODES = ("auto", "off")


class BindError(OSError):
    """A listener could not bind its address: ``cannot bind <what> on <host>:<port>: <reason>``."""

    def __init__(self, what: str, host: str, port: int, reason: str) -> None:
        shown = f"[{host}]" if ":" in host else host
        super().__init__(f"cannot bind {what} on {shown}:{port}: {reason}")
        self.what = what
        self.host = host
        self.port = port
        self.reason = reason


@dataclass
class Faults:
    """Fault injection, settable from CLI flags and at runtime (the emulator's admin endpoint).

    API faults are applied by the service before a method runs; scheduling and replica faults
    are read by the runner each time it needs them, so a runtime change takes effect at once.
    """

    #: probability (0..1) that a call fails, per method name (``CreateCustomJob``...) or ``"*"``.
    error_rate: dict[str, float] = field(default_factory=dict)
    #: probability (0..1) that a call runs and then its answer is lost (the client gets an error drawn
    #: from ``error_codes`` although the call took effect: a Create made the job), per method or ``"*"``.
    lost_answer_rate: dict[str, float] = field(default_factory=dict)
    #: gRPC status code names drawn from when a call fails (``UNAVAILABLE``, ``RESOURCE_EXHAUSTED``...).
    error_codes: list[str] = field(default_factory=lambda: ["UNAVAILABLE"])
    #: seconds added to every API call.
    latency_s: float = 0.0
    #: seconds a new job stays QUEUED, then PENDING, before its replicas start.
    queued_s: float = 0.0
    pending_s: float = 0.0
    #: seconds a job stays PENDING once its capacity is granted, as Vertex AI provisions its VMs
    #: (the ``vertex-emulator`` command sets ``--provisioning-seconds``, default 10; in-process: 0).
    provisioning_s: float = 0.0
    #: replica keys (``workerpool1-0``; ``*`` globs allowed) killed ``crash_after_s`` seconds
    #: after they start, with exit code ``crash_exit_code``.
    crash_replicas: list[str] = field(default_factory=list)
    crash_after_s: float = 0.0
    crash_exit_code: int = 137
    #: seed for the random draws, so a fault run can be repeated.
    seed: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


#: region -> accelerator type (a v1 ``AcceleratorType`` name) -> a count
RegionCounts = dict[str, dict[str, int]]


@dataclass
class Capacity:
    """GPU capacity as Vertex AI shows it: quotas, free capacity, Spot preemption, flex-start
    (capacity/gpus.py has the service's texts and rules, with their sources; capacity/ledger.py applies them).

    Set from ``--capacity-file`` and flags, and at runtime through ``/emulator/capacity``
    (capacity/settings.py validates it). Every map is ``{region: {accelerator type: count}}``; a
    region or accelerator it does not name is unlimited, so the default (all empty) changes nothing.
    """

    #: on-demand quota (``custom_model_training_<gpu>``): GPUs running at once, STANDARD jobs.
    quota: RegionCounts = field(default_factory=dict)
    #: preemptible quota (``custom_model_training_preemptible_<gpu>``): SPOT and FLEX_START jobs.
    preemptible_quota: RegionCounts = field(default_factory=dict)
    #: free GPUs in the region for on-demand (STANDARD) jobs, Spot jobs and flex-start jobs.
    stock: RegionCounts = field(default_factory=dict)
    spot_stock: RegionCounts = field(default_factory=dict)
    flex_start_stock: RegionCounts = field(default_factory=dict)
    #: seconds a STANDARD or SPOT job waits PENDING for free GPUs before it fails with the stockout.
    stockout_after_s: float = 60.0
    #: a Create that fits the quota alone but not beside the jobs running: ``"queue"`` (the job waits
    #: QUEUED, as documented) or ``"refuse"`` (RESOURCE_EXHAUSTED at Create, as users report).
    over_quota: str = "queue"
    #: preemptions per running Spot replica and hour (random, seeded with ``Faults.seed``).
    spot_preemptions_per_hour: float = 0.0
    #: preempt a Spot job's primary replica this many seconds after each start (None: never).
    spot_preempt_after_s: float | None = None
    #: how many times a preempted Spot job is restarted before it fails.
    spot_restart_limit: int = 6
    #: seconds between a preempted replica's SIGTERM and its SIGKILL.
    spot_notice_s: float = 30.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


@dataclass
class EmulatorConfig:
    state_dir: Path
    #: local directory standing for ``gs://``: ``gs://bucket/a/b`` is ``<gcs_root>/bucket/a/b``.
    gcs_root: Path
    #: ``"auto"``: each replica sees ``gcs_root`` at ``/gcs`` where the host can give it a mount
    #: namespace (runtime/gcs_mount.py); ``"off"``: no replica gets ``/gcs`` (``--gcs-mount``).
    gcs_mount: str = "auto"
    host: str = "127.0.0.1"
    #: the access token every REST and gRPC call must carry (``Authorization: Bearer <token>``);
    #: required when ``host`` is not a loopback address (see ``check_exposure``).
    auth_token: str | None = field(default=None, repr=False)
    grpc_port: int = 0
    rest_port: int = 0
    #: image URI -> argv prefix, for container specs that give no ``command``.
    image_map: dict[str, list[str]] = field(default_factory=dict)
    faults: Faults = field(default_factory=Faults)
    #: GPU quotas, free capacity, Spot preemption and flex-start (unlimited by default).
    capacity: Capacity = field(default_factory=Capacity)
    #: a scenario (scenario/model.py's ``Scenario``, as ``--scenario`` reads it) the emulator plays from
    #: its start; None: none. Typed ``object`` here, below the scenario package's layer.
    scenario: object | None = None
    #: a snapshot (``<state_dir>/snapshots/<name>``, core/snapshots.py) whose state the emulator starts
    #: from (``--restore``); None: the state directory as it is.
    restore: str | None = None
    #: the most bytes a snapshot may hold (its jobs, logs and objects); a larger state is refused.
    snapshot_max_bytes: int = 1024**3
    #: base URL of the REST/web server, set once it is bound (web access URIs hang off it).
    web_base_url: str | None = None
    #: seconds between SIGTERM and SIGKILL when the runner stops a replica's process tree.
    stop_grace_s: float = 5.0
    #: how many times a job with ``scheduling.restartJobOnWorkerRestart`` is restarted before it fails.
    restart_limit: int = 3
    #: log lines quoted in a failed job's ``error.message`` and shown by ``replica_view``.
    log_tail_lines: int = 20
    #: names of the emulator's environment variables replicas get too (``--pass-env``); replicas
    #: otherwise see only what a local process needs (cluster.LOCAL_ENV_NAMES).
    pass_env: list[str] = field(default_factory=list)
    #: port of the local Cloud Storage JSON API (cloud_storage/api.py) on 127.0.0.1; None: not served.
    storage_port: int | None = 0
    #: its base URL once bound (replicas get it as ``STORAGE_EMULATOR_HOST``).
    storage_endpoint: str | None = None
    #: connections each HTTP listener (REST, storage) serves at once, one thread each; beyond it the
    #: connection waiting longest without a request is closed, or, when all are busy, 503.
    max_connections: int = 128
    #: seconds a connection may wait for its next request (HTTP keep-alive; gRPC: idle connection).
    idle_timeout_s: float = 60.0
    #: seconds from a request's first byte to the end of its headers (HTTP).
    header_timeout_s: float = 10.0
    #: seconds to read a whole REST request body (storage uploads: ``idle_timeout_s`` per block).
    body_timeout_s: float = 60.0
    #: gRPC calls handled at once (its worker threads); calls beyond wait for one.
    grpc_workers: int = 16
    #: gRPC calls admitted at once (handled or waiting); beyond it a call is RESOURCE_EXHAUSTED.
    grpc_max_concurrent_rpcs: int = 64
    #: replicas running at once, every job and trial together (each a process tree under its
    #: supervisor); a job that does not fit the room left waits QUEUED (capacity/host.py).
    max_replica_processes: int = 64
    #: replicas one CustomJob (or one tuning trial) may have; Create refuses more (RESOURCE_EXHAUSTED).
    max_job_replicas: int = 64


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback IP address (``127.0.0.0/8``, ``::1``)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, auth_token: str | None) -> None:
    """Raise ValueError unless ``host`` is loopback or an access token is set (and long enough).

    The emulator runs the commands its jobs name: reachable from other machines, it must not run
    them for anyone without the token.
    """
    if auth_token is not None and len(auth_token) < 16:
        raise ValueError("auth_token: must be at least 16 characters")
    if auth_token is None and not is_loopback_host(host):
        raise ValueError(
            f"host: {host!r} is not a loopback address; binding it runs jobs for anyone who can reach "
            "it, so an access token is required (--auth-token)"
        )


def check_gcs_mount(mode: str) -> None:
    """Raise ValueError unless ``mode`` is one of ``GCS_MOUNT_MODES``."""
    if mode not in GCS_MOUNT_MODES:
        raise ValueError(f"gcs_mount: must be 'auto' or 'off' (got {mode!r})")
