"""Persistent resources' replicas as the jobs on them meet them: one book for every resource's pools.

A persistent resource holds its machines from its creation until it is deleted (its GPUs are held in the
region's books, ledger.py, under the resource's name, so on-demand jobs cannot take them); a CustomJob
with ``persistent_resource_id`` takes replicas of the resource's pools instead of the region's stock and
quota. ``ResourceBooks.replicas`` is a ``Ledger`` keyed ``(resource name, pool id, "replicas")``
whose limit is the pool's capacity while the resource is RUNNING (``open``) and 0 otherwise (``close``:
provisioning, rebooting, stopping, gone), so a job on a full resource waits in line, first come first
served, until the jobs before it free their replicas.

A job's driver ``attach``-es to its resource while it waits or runs; ``evict`` tells every attached
driver that its resource went away (deleted or rebooted), and the driver ends the job.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from vertex_emulator.capacity.ledger import Key, Ledger

__all__ = ["ResourceBooks", "replica_needs"]


def replica_needs(resource: str, taken: Mapping[str, int]) -> dict[Key, int]:
    """The replica book's keys for ``taken`` (replicas per pool id) of ``resource``."""
    return {(resource, pool, "replicas"): count for pool, count in taken.items() if count > 0}


class ResourceBooks:
    """The replicas of every persistent resource, and the jobs on each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._limits: dict[tuple[str, str], int] = {}
        self._jobs: dict[str, dict[str, Callable[[str, bool], None]]] = {}
        self.replicas = Ledger(self._limit)

    def _limit(self, key: Key) -> int | None:
        resource, pool, _ = key
        with self._lock:
            return self._limits.get((resource, pool), 0)

    def open(self, resource: str, pools: Mapping[str, int]) -> None:
        """``resource`` is RUNNING with these pools (capacity per pool id): jobs waiting may start."""
        with self._lock:
            for key in [key for key in self._limits if key[0] == resource]:
                del self._limits[key]
            self._limits.update({(resource, pool): count for pool, count in pools.items()})
        self.replicas.changed()

    def close(self, resource: str) -> None:
        """``resource`` has no replica to give (not RUNNING, or gone): jobs wait, or are evicted."""
        with self._lock:
            for key in [key for key in self._limits if key[0] == resource]:
                del self._limits[key]

    def clear(self) -> None:
        """Every resource closed (a restore or reset replaces them all)."""
        with self._lock:
            self._limits.clear()

    def attach(self, resource: str, job: str, evict: Callable[[str, bool], None]) -> None:
        """Job ``job`` waits for or runs on ``resource``; ``evict(message, cancel)`` ends it if the
        resource goes: CANCELLED with ``cancel``, else FAILED."""
        with self._lock:
            self._jobs.setdefault(resource, {})[job] = evict

    def detach(self, job: str) -> None:
        with self._lock:
            for jobs in self._jobs.values():
                jobs.pop(job, None)

    def jobs_on(self, resource: str) -> list[str]:
        """The jobs waiting for or running on ``resource``."""
        with self._lock:
            return sorted(self._jobs.get(resource, {}))

    def evict(self, resource: str, message: str, *, running: bool = False, cancel: bool = False) -> list[str]:
        """Tell every job on ``resource`` (only those holding its replicas, with ``running``) that it went
        away: each ends FAILED with ``message`` (CANCELLED with ``cancel``). Their names."""
        holders = set(self.replicas.holders()) if running else None
        with self._lock:
            jobs = {
                job: evict
                for job, evict in self._jobs.get(resource, {}).items()
                if holders is None or job in holders
            }
        for evict in jobs.values():
            evict(message, cancel)
        return sorted(jobs)

    def snapshot(self) -> list[dict[str, Any]]:
        """Per resource pool: its capacity, the replicas in use, the most in use at once, who waits."""
        with self._lock:
            keys = {(resource, pool, "replicas") for resource, pool in self._limits}
        out = []
        for row in self.replicas.rows(keys):
            resource, pool, _ = row.pop("key")
            out.append({"resource": resource, "pool": pool, **row})
        return out
