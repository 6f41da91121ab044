"""Settings shared by the emulator's API side and its runner (the contract between the two)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["EmulatorConfig", "Faults"]


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
    #: replica keys (``workerpool1-0``; ``*`` globs allowed) killed ``crash_after_s`` seconds
    #: after they start, with exit code ``crash_exit_code``.
    crash_replicas: list[str] = field(default_factory=list)
    crash_after_s: float = 0.0
    crash_exit_code: int = 137
    #: seed for the random draws, so a fault run can be repeated.
    seed: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


@dataclass
class EmulatorConfig:
    state_dir: Path
    #: local directory standing for ``gs://``: ``gs://bucket/a/b`` is ``<gcs_root>/bucket/a/b``.
    gcs_root: Path
    host: str = "127.0.0.1"
    grpc_port: int = 0
    rest_port: int = 0
    #: image URI -> argv prefix, for container specs that give no ``command``.
    image_map: dict[str, list[str]] = field(default_factory=dict)
    faults: Faults = field(default_factory=Faults)
    #: base URL of the REST/web server, set once it is bound (web access URIs hang off it).
    web_base_url: str | None = None
    #: seconds between SIGTERM and SIGKILL when the runner stops a replica's process group.
    stop_grace_s: float = 5.0
    #: how many times a job with ``scheduling.restartJobOnWorkerRestart`` is restarted before it fails.
    restart_limit: int = 3
    #: log lines quoted in a failed job's ``error.message`` and shown by ``replica_view``.
    log_tail_lines: int = 20
