"""The host's ceilings on replicas: what one machine can run, which Vertex AI does not limit the same way.

Two settings (``EmulatorConfig``, command line flags):

* ``max_replica_processes`` (``--max-replica-processes``, default 64): replicas running at once, every
  job and tuning trial together. Each replica is a process tree under its own supervisor
  (runtime/procs.py), so this bounds the processes the emulator starts, not counting what a replica
  forks itself.
* ``max_job_replicas`` (``--max-job-replicas``, default 64): replicas one CustomJob (or one trial of a
  tuning job) may have. Every replica's ``CLUSTER_SPEC`` and ``TF_CONFIG`` list every replica of its
  job, so a job's environment grows with the square of its replicas, and a job's Get grows with them
  (``webAccessUris`` has a key per replica): this bounds both.

A job that can never run here -- more replicas than either ceiling -- is refused at Create with
RESOURCE_EXHAUSTED (``ceiling_problem``), as the service refuses a Create over a quota ("The following
quota metrics exceed quota limits: ...", HTTP 429); the message names the ceiling and the flag that
raises it. A job that fits the ceiling but not the room left now is not refused: it waits QUEUED, as a
Vertex AI job waits while capacity is short, and starts when running jobs end and free their replicas
(``Room``). Waiting jobs start in the order they asked (first come, first served: a large job is never
passed over for ever by small ones). A tuning job's trials are CustomJobs and wait the same way; its
driver starts at most as many trials at once as the ceiling can hold (``parallel_trials``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_MAX_JOB_REPLICAS",
    "DEFAULT_MAX_REPLICA_PROCESSES",
    "HostCeilings",
    "Room",
    "message_replicas",
    "spec_replicas",
]

DEFAULT_MAX_REPLICA_PROCESSES = 64
DEFAULT_MAX_JOB_REPLICAS = 64
#: the Create request's job field, and its CustomJobSpec field, by job kind (the names the answer uses)
_SPEC_FIELD = {"customJobs": "job_spec", "hyperparameterTuningJobs": "trial_job_spec"}


def spec_replicas(job_spec: Mapping[str, Any]) -> int:
    """The replicas of a v1 JSON ``CustomJobSpec``: the sum of its used pools' ``replicaCount``
    (counted, never listed one by one; a value that is not a number counts as 0)."""
    total = 0
    for pool in job_spec.get("workerPoolSpecs") or []:
        if not isinstance(pool, Mapping) or not pool:
            continue
        try:
            total += max(0, int(pool.get("replicaCount") or 0))
        except (TypeError, ValueError):
            continue
    return total


def message_replicas(kind: str, message: Any) -> int:
    """The replicas of a Create request's job (a proto-plus ``CustomJob``, or a tuning job's trial job)."""
    raw = message if hasattr(message, "DESCRIPTOR") else type(message).pb(message)
    spec = getattr(raw, _SPEC_FIELD[kind])
    return sum(max(0, pool.replica_count) for pool in spec.worker_pool_specs if pool.ByteSize())


class Room:
    """Replica slots shared by every job, granted first come, first served.

    ``acquire(owner, count, wake)`` takes ``count`` slots for ``owner`` when it is first in line and they
    are free, else puts it in line (once) and returns False; ``wake()`` is called whenever slots are
    freed, so the owner tries again. ``release(owner)`` frees what it holds and takes it out of line.
    """

    def __init__(self, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError(f"max_replica_processes: must be at least 1 (got {ceiling})")
        self.ceiling = ceiling
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}
        self._line: dict[str, tuple[int, Callable[[], None]]] = {}  # insertion order: arrival order

    def acquire(self, owner: str, count: int, wake: Callable[[], None]) -> bool:
        with self._lock:
            if owner in self._held:
                return True
            self._line.setdefault(owner, (count, wake))
            first = next(iter(self._line))
            if first != owner or self._running() + count > self.ceiling:
                return False
            del self._line[owner]
            self._held[owner] = count
            waiting = [wake_next for _, wake_next in self._line.values()]
        for wake_next in waiting:  # the next in line may fit in what is left
            wake_next()
        return True

    def release(self, owner: str) -> None:
        with self._lock:
            freed = self._held.pop(owner, 0)
            was_waiting = self._line.pop(owner, None) is not None
            waiting = [wake for _, wake in self._line.values()] if freed or was_waiting else []
        for wake in waiting:
            wake()

    def _running(self) -> int:
        return sum(self._held.values())

    def waiting_ahead(self, owner: str) -> int:
        """How many jobs are in line before ``owner``."""
        with self._lock:
            names = list(self._line)
        return names.index(owner) if owner in names else 0

    def snapshot(self) -> dict[str, Any]:
        """``{"ceiling", "running", "waiting": [{"job", "replicas"}...]}`` (running: replicas held)."""
        with self._lock:
            return {
                "ceiling": self.ceiling,
                "running": self._running(),
                "waiting": [{"job": name, "replicas": count} for name, (count, _) in self._line.items()],
            }


@dataclass
class HostCeilings:
    """The two ceilings and the shared ``Room`` (one per emulator: the runner and the service share it)."""

    max_replica_processes: int = DEFAULT_MAX_REPLICA_PROCESSES
    max_job_replicas: int = DEFAULT_MAX_JOB_REPLICAS

    def __post_init__(self) -> None:
        if self.max_job_replicas < 1:
            raise ValueError(f"max_job_replicas: must be at least 1 (got {self.max_job_replicas})")
        self.room = Room(self.max_replica_processes)

    @property
    def job_ceiling(self) -> int:
        """The most replicas one job can have here (the smaller ceiling)."""
        return min(self.max_job_replicas, self.max_replica_processes)

    def ceiling_problem(self, kind: str, replicas: int) -> str | None:
        """The RESOURCE_EXHAUSTED text for a job of ``replicas`` replicas that can never run here, or
        None when it fits (it may still wait for room)."""
        field = f"{_SPEC_FIELD[kind]}.worker_pool_specs"
        what = "the job" if kind == "customJobs" else "each trial of the tuning job"
        if replicas > self.max_job_replicas:
            ceiling, flag, meaning = self.max_job_replicas, "--max-job-replicas", "one job may have"
        elif replicas > self.max_replica_processes:
            ceiling, flag, meaning = self.max_replica_processes, "--max-replica-processes", "run at once"
        else:
            return None
        return (
            f"{field}: {what} has {replicas} replicas, more than the {ceiling} replicas {meaning} on this "
            f"emulator (a host ceiling, {flag} {ceiling}; Vertex AI documents no such limit): start the "
            f"emulator with a higher {flag}, or use fewer replicas"
        )

    def parallel_trials(self, requested: int, trial_replicas: int) -> int:
        """How many trials a tuning job starts at once: what it asks, at most what the ceiling holds."""
        return max(1, min(requested, self.max_replica_processes // max(1, trial_replicas)))

    def snapshot(self) -> dict[str, Any]:
        return {**self.room.snapshot(), "max_job_replicas": self.max_job_replicas}
