"""A job's admission: the waits that keep it QUEUED or PENDING until what it needs is free.

``Admission`` is a base of every job driver (driver.py, ``JobDriver``), run on the job's driver
thread before the job starts:

- QUEUED, for the project's GPU quota in the job's region (``wait_for_quota``; Vertex AI "keeps the
  job queued until you have sufficient quotas", capacity/ledger.py); a CustomJob with
  ``persistent_resource_id`` instead waits QUEUED for its resource's replicas (``wait_for_resource``,
  capacity/resources.py), and neither draws on the region's quota and stock nor waits to be provisioned;
- QUEUED, for room for all the job's replicas under the host's ceiling (``wait_for_room``; first
  come, first served, capacity/host.py): a job that can never fit fails (code 8);
- PENDING, for free GPUs in its region (``wait_for_gpus``): a STANDARD or SPOT job waits at most
  ``Capacity.stockout_after_s`` and then fails with the stockout (code 8); a FLEX_START job waits up
  to its ``max_wait_duration``. A job that has to wait for GPUs gives its replica slots back for the
  wait (a job waiting for accelerators holds no host slots: CPU-only jobs start meanwhile) and takes
  them again, PENDING, once its GPUs are granted.

A cancel or close ends any wait. What the job holds is freed as its driver's thread ends
(``release_resources``).
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any, Protocol

from vertex_emulator.capacity.gpus import (
    STOCKOUT_CODE,
    Provisioning,
    flex_start_message,
    max_wait_s,
    provisioning,
    region_of,
    stockout_message,
)
from vertex_emulator.capacity.host import HostCeilings
from vertex_emulator.capacity.ledger import GpuCapacity, Key, Ledger
from vertex_emulator.capacity.resources import ResourceBooks, replica_needs
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.rules.persistent_resources import job_fit

__all__ = ["Admission", "CapacityHost"]


class CapacityHost(Protocol):
    """The books a job's admission reads: the host's ceilings and the GPU quota and capacity."""

    @property
    def ceilings(self) -> HostCeilings:
        """The host's ceilings on replicas and the room every job's replicas share."""
        ...

    @property
    def gpus(self) -> GpuCapacity:
        """The GPU quota and capacity books every job shares (capacity/ledger.py)."""
        ...

    @property
    def resources(self) -> ResourceBooks:
        """The persistent resources' replicas, for the jobs that run on one (capacity/resources.py)."""
        ...


class Admission:
    """The waits before a job starts (a base of ``JobDriver``, which provides what is declared here)."""

    job_name: str
    store: JobStore
    host: CapacityHost
    events: queue.Queue[tuple[Any, ...]]

    def handle_control(self, event: tuple[Any, ...]) -> bool:
        """Handle cancel/close; True when the job is over (JobDriver)."""
        raise NotImplementedError

    def finish(self, state: str, code: int | None = None, message: str | None = None) -> None:
        """Write the job's terminal state (JobDriver)."""
        raise NotImplementedError

    def on_waiting(self, reason: str, state: str = "QUEUED") -> None:
        """The job waits, in ``state`` (JobDriver)."""
        raise NotImplementedError

    def replicas_needed(self, job: dict[str, Any]) -> int:
        """The replica slots the job runs in (a CustomJob: its replicas; 0 for a job that runs none)."""
        return 0

    def gpus_needed(self, job: dict[str, Any]) -> dict[str, int]:
        """The GPUs the job holds while it runs, per accelerator type (none for a job that runs none)."""
        return {}

    # -- GPU quota and free capacity (capacity/ledger.py) ---------------------------------------------

    def _gpu_request(self, job: dict[str, Any]) -> tuple[str, dict[str, int], Provisioning, dict[str, Any]]:
        spec: dict[str, Any] = job.get("jobSpec") or {}
        return region_of(self.job_name), self.gpus_needed(job), provisioning(spec), spec

    def _wait_in_line(
        self,
        ledger: Ledger,
        needs: dict[Key, int],
        tell: Callable[[list[Key]], None],
        deadline: Callable[[], float | None] | None = None,
    ) -> bool | None:
        """Take ``needs`` from ``ledger``, waiting in line: True when granted, False when a cancel or
        close ended the wait, None when ``deadline()`` (the service clock's monotonic time, or None: no
        deadline) passed.
        ``tell(short)`` is called once, when the job first has to wait."""
        told = False
        while True:
            short = ledger.acquire(self.job_name, needs, lambda: self.events.put(("capacity",)))
            if not short:
                return True
            if not told:
                told = True
                tell(short)
            until = deadline() if deadline is not None else None
            timeout = None if until is None else until - self.store.clock.monotonic()
            if timeout is not None and timeout <= 0:
                ledger.release(self.job_name)  # out of line
                return None
            try:
                event = self.store.clock.get(self.events, timeout)
            except queue.Empty:
                continue
            if self.handle_control(event):
                ledger.release(self.job_name)
                return False

    def wait_for_quota(self, job: dict[str, Any]) -> bool:
        """Wait QUEUED until the project's quota has room for the job's GPUs in its region (Vertex AI
        "keeps the job queued until you have sufficient quotas"); False when a cancel or close ended
        the wait. The quota is freed when the driver's thread ends (``release_resources``)."""
        region, gpus, how, _ = self._gpu_request(job)
        if not gpus:
            return True
        books = self.host.gpus
        needs = books.quota_needs(region, gpus, how)

        def tell(short: list[Key]) -> None:
            parts = [
                f"{needs[key]} {key[1]} for {books.metric(key)} (limit {books.quota.limit_of(key)}, "
                f"{books.quota.in_use(key)} in use)"
                for key in short
            ]
            self.on_waiting(
                f"Waiting for quota in {region}: the job needs {'; '.join(parts)}. It starts when running "
                "jobs free their GPUs or the quota is raised.",
                str(job.get("state") or "JOB_STATE_QUEUED").removeprefix("JOB_STATE_"),
            )

        return self._wait_in_line(books.quota, needs, tell) is True

    def wait_for_gpus(self, job: dict[str, Any], slots: int = 0) -> bool:
        """Wait PENDING until the region has free GPUs for the job. A STANDARD or SPOT job waits at most
        ``Capacity.stockout_after_s``, then fails with the stockout (code 8); a FLEX_START job waits up
        to its ``max_wait_duration`` (0: for ever), then fails. False when the job cannot start.

        The job's ``slots`` replica slots (taken by ``wait_for_room``) are given back when it has to
        wait, and taken again, PENDING, once its GPUs are granted."""
        region, gpus, how, spec = self._gpu_request(job)
        if not gpus:
            return True
        books = self.host.gpus
        needs = books.stock_needs(region, gpus, how)
        started = self.store.clock.monotonic()  # service seconds (core/clock.py)
        wait_s = max_wait_s(spec) if how == "flex_start" else None

        def deadline() -> float | None:
            if how == "flex_start":
                return None if wait_s is None else started + wait_s
            with books.settings.lock:  # read at each wake: a change applies to the jobs waiting
                return started + books.settings.stockout_after_s

        def tell(short: list[Key]) -> None:
            wanted = ", ".join(f"{needs[key]} {key[1]}" for key in short)
            if how == "flex_start":
                limit = "for ever (max_wait_duration 0s)" if wait_s is None else f"up to {wait_s:g}s"
                why = f"Dynamic Workload Scheduler (FLEX_START) waits {limit} for {wanted} in {region}."
            else:
                kind = "Spot " if how == "spot" else ""
                why = f"No free {kind}capacity in {region} for {wanted}; the job fails if none frees up."
            self.on_waiting(why, "PENDING")
            if slots > 0:
                waited.append(True)
                self.release_room()  # waiting for accelerators holds no host slots

        waited: list[bool] = []
        granted = self._wait_in_line(books.stock, needs, tell, deadline)
        if granted is None:
            if how == "flex_start":
                self.finish("JOB_STATE_FAILED", STOCKOUT_CODE, flex_start_message(region, wait_s or 0.0))
            else:
                self.finish("JOB_STATE_FAILED", STOCKOUT_CODE, stockout_message(region))
        if granted is True and waited:
            return self.wait_for_room(slots, "PENDING")
        return granted is True

    # -- a persistent resource's replicas (capacity/resources.py) ----------------------------------------

    def resource_of(self, job: dict[str, Any]) -> str | None:
        """The persistent resource the job runs on (``jobSpec.persistentResourceId``, in the job's own
        project and location), or None."""
        spec = job.get("jobSpec") or {}
        resource = spec.get("persistentResourceId") if isinstance(spec, dict) else None
        if not resource:
            return None
        return f"{'/'.join(self.job_name.split('/')[:4])}/persistentResources/{resource}"

    def wait_for_resource(self, job: dict[str, Any], resource: str) -> bool:
        """Wait QUEUED until ``resource`` has the replicas the job's pools take (first come, first served
        among its jobs); False when a cancel, a close or the resource's end (``evict``) ended the wait."""
        books = self.host.resources
        books.attach(
            resource, self.job_name, lambda message, cancel: self.events.put(("evict", message, cancel))
        )
        try:
            body = self.store.get_resource(resource)
        except KeyError:
            self.finish("JOB_STATE_FAILED", 5, f"The PersistentResource {resource} does not exist.")
            return False
        taken, problems = job_fit(body, job.get("jobSpec") or {})
        if problems:
            self.finish("JOB_STATE_FAILED", 9, "; ".join(problems))
            return False
        needs = replica_needs(resource, taken)

        def tell(short: list[Key]) -> None:
            wanted = ", ".join(f"{needs[key]} of pool {key[1]}" for key in short)
            self.on_waiting(
                f"Waiting for replicas of persistent resource {resource}: the job needs {wanted}, held by "
                "the jobs running on it (or the resource is not RUNNING). It starts when they are free.",
                "QUEUED",
            )

        return self._wait_in_line(books.replicas, needs, tell) is True

    def release_resources(self) -> None:
        """Free the job's replica slots, quota and GPUs (or leave their lines): call as the thread ends."""
        self.host.resources.replicas.release(self.job_name)
        self.host.resources.detach(self.job_name)
        self.release_room()
        self.host.gpus.quota.release(self.job_name)
        self.host.gpus.stock.release(self.job_name)

    def wait_for_room(self, count: int, state: str = "QUEUED") -> bool:
        """Wait, in the job's current ``state`` (QUEUED for a new job), until ``count`` replica slots are
        free under the host's ceiling (capacity.Room; first come, first served); False when a cancel or
        close ended the wait, or the job can never fit (it is then FAILED, code 8 RESOURCE_EXHAUSTED).
        The slots are freed when the driver's thread ends (``release_room``)."""
        if count <= 0:
            return True
        ceilings = self.host.ceilings
        problem = ceilings.ceiling_problem("customJobs", count)
        if problem is not None:  # a job stored before the ceiling was lowered (an emulator restart)
            self.finish("JOB_STATE_FAILED", 8, problem.partition(": ")[2])
            return False
        room = ceilings.room
        told = False
        while not room.acquire(self.job_name, count, lambda: self.events.put(("room",))):
            if not told:
                told = True
                snapshot = room.snapshot()
                ahead = room.waiting_ahead(self.job_name)
                self.on_waiting(
                    f"Waiting for room to run {count} replicas: this emulator runs at most "
                    f"{room.ceiling} replicas at once (--max-replica-processes); {snapshot['running']} are "
                    f"running and {ahead} {'job waits' if ahead == 1 else 'jobs wait'} ahead of this one. It "
                    "starts when running jobs end.",
                    state,
                )
            if self.handle_control(self.events.get()):
                return False
        return True

    def release_room(self) -> None:
        """Free the job's replica slots (or leave the line): call as the driver's thread ends."""
        self.host.ceilings.room.release(self.job_name)
