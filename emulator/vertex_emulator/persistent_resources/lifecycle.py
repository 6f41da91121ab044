"""A persistent resource's life after its Create: provisioning (the region's stock, then
``Faults.provisioning_s``), RUNNING (its pools open to its jobs, capacity/resources.py), REBOOTING,
STOPPING and gone, each a write of the stored resource; and ``recover``, which settles what the store
holds when the emulator starts or its state is restored or reset.

One thread per resource in transition, waiting on the service clock (core/clock.py) for the stock line or
the provisioning time, and on its queue for a stop; the outcome of the operation it ends is kept for
GetOperation (``outcome``).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Mapping
from typing import Any

from vertex_emulator.capacity.gpus import region_of, spec_gpus, stockout_message
from vertex_emulator.capacity.ledger import GpuCapacity
from vertex_emulator.capacity.resources import ResourceBooks
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.rules.persistent_resources import pool_capacity, pool_id, pool_size

__all__ = ["STOCKOUT_CODE", "Lifecycle", "capacity_of", "region_gpus"]

_log = logging.getLogger(__name__)
#: google.rpc code of a resource (and its Create operation) that found no capacity: RESOURCE_EXHAUSTED
STOCKOUT_CODE = 8
#: the ``Outcome`` of an operation done with its resource as the response
DONE = True
Outcome = bool | tuple[int, str] | None


def region_gpus(resource: Mapping[str, Any]) -> dict[str, int]:
    """The GPUs a resource holds from its region: each pool's provisioned replicas x its accelerators."""
    pools = [
        {"machineSpec": pool.get("machineSpec") or {}, "replicaCount": pool_size(pool)}
        for pool in resource.get("resourcePools") or []
    ]
    return spec_gpus({"workerPoolSpecs": pools})


def capacity_of(resource: Mapping[str, Any]) -> dict[str, int]:
    """Replicas per pool id a RUNNING resource gives its jobs."""
    pools = resource.get("resourcePools") or []
    return {pool_id(pool, i): pool_capacity(pool) for i, pool in enumerate(pools)}


class Lifecycle:
    """The resources' transitions and the threads that make them."""

    def __init__(self, store: JobStore, gpus: GpuCapacity, books: ResourceBooks) -> None:
        self.store, self.gpus, self.books = store, gpus, books
        self._lock = threading.Lock()
        self._threads: dict[str, tuple[threading.Thread, queue.Queue[tuple[Any, ...]]]] = {}
        self._outcomes: dict[str, Outcome] = {}
        self._known: set[str] = set()  # every resource whose GPUs the books may hold

    def outcome(self, op_name: str) -> Outcome:
        with self._lock:
            return self._outcomes.get(op_name)

    def _write(self, name: str, state: str, **fields: Any) -> dict[str, Any] | None:
        def apply(resource: dict[str, Any]) -> None:
            resource["state"] = state
            resource.update(fields)
            if state != "ERROR":
                resource.pop("error", None)

        try:
            return self.store.update_resource(name, apply)
        except KeyError:
            return None

    def _start(self, name: str, target: Any, *args: Any) -> None:
        events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        thread = threading.Thread(
            target=target, args=(name, events, *args), name=f"resource-{name.rsplit('/', 1)[-1]}", daemon=True
        )
        with self._lock:
            self._known.add(name)
            self._threads[name] = (thread, events)
        thread.start()

    def _done(self, name: str, op_name: str | None, outcome: Outcome) -> None:
        with self._lock:
            self._threads.pop(name, None)
            if op_name is not None:
                self._outcomes[op_name] = outcome

    def _pause(self, events: queue.Queue[tuple[Any, ...]], seconds: float) -> bool:
        """Wait ``seconds`` of service time; True when a stop came first."""
        clock = self.store.clock
        deadline = clock.monotonic() + max(0.0, seconds)
        while (left := deadline - clock.monotonic()) > 0:
            try:
                if clock.get(events, left)[0] == "stop":
                    return True
            except queue.Empty:
                continue
        return False

    def _provisioning_s(self) -> float:
        faults = self.gpus.faults
        if faults is None:
            return 0.0
        with faults.lock:
            return float(faults.provisioning_s)

    # -- provisioning ---------------------------------------------------------------------------

    def provision(self, name: str, op_name: str | None) -> None:
        """Provision stored resource ``name`` (PROVISIONING; its quota taken already) in a thread."""
        self._start(name, self._provision, op_name)

    def _provision(self, name: str, events: queue.Queue[tuple[Any, ...]], op_name: str | None) -> None:
        try:
            outcome = self._provisioned(name, events)
        except Exception as exc:  # a bug must not leave the resource PROVISIONING for ever
            _log.exception("provisioning %s failed", name)
            outcome = (13, f"Internal emulator error while provisioning: {exc!r}")
            self._write(name, "ERROR", error={"code": 13, "message": outcome[1]})
        self._done(name, op_name, outcome)

    def _provisioned(self, name: str, events: queue.Queue[tuple[Any, ...]]) -> Outcome:
        resource = self.store.get_resource(name)
        region, clock, settings = region_of(name), self.store.clock, self.gpus.settings
        needs = self.gpus.stock_needs(region, region_gpus(resource), "standard")
        started = clock.monotonic()
        while self.gpus.stock.acquire(name, needs, lambda: events.put(("capacity",))):
            with settings.lock:
                left = started + settings.stockout_after_s - clock.monotonic()
            event: tuple[Any, ...] = ("timeout",)
            if left > 0:
                try:
                    event = clock.get(events, left)
                except queue.Empty:
                    continue
            if event[0] == "stop":
                self.gpus.stock.release(name)
                return None
            if event[0] == "timeout":  # the stockout: nothing held, the resource unusable
                self.release(name)
                message = stockout_message(region)
                self._write(name, "ERROR", error={"code": STOCKOUT_CODE, "message": message})
                return (STOCKOUT_CODE, message)
        if self._pause(events, self._provisioning_s()):
            return None
        self._write(name, "RUNNING", startTime=clock.now_rfc3339())
        self.books.open(name, capacity_of(resource))
        return DONE

    # -- reboot, stop -----------------------------------------------------------------------------

    def reboot(self, name: str, op_name: str) -> None:
        """REBOOTING: the jobs running on it fail, those waiting wait; RUNNING again after the
        provisioning time."""
        self._write(name, "REBOOTING")
        self.books.close(name)
        self.books.evict(
            name, f"The PersistentResource {name} was rebooted while the job ran on it.", running=True
        )
        self._start(name, self._reboot, op_name)

    def _reboot(self, name: str, events: queue.Queue[tuple[Any, ...]], op_name: str) -> None:
        if self._pause(events, self._provisioning_s()):
            self._done(name, op_name, None)
            return
        resource = self._write(name, "RUNNING")
        if resource is not None:
            self.books.open(name, capacity_of(resource))
        self._done(name, op_name, DONE)

    def stop(self, name: str) -> list[str]:
        """Delete resource ``name``: STOPPING, its jobs cancelled, its GPUs freed, gone. Those jobs."""
        self._stop_thread(name)
        self._write(name, "STOPPING")
        self.books.close(name)
        failed = self.books.evict(
            name, f"The job was cancelled: its PersistentResource {name} is being deleted.", cancel=True
        )
        self.release(name)
        try:
            self.store.delete_resource(name)
        except KeyError:
            pass
        return failed

    def release(self, name: str) -> None:
        """Free the region's GPUs resource ``name`` holds (quota and stock)."""
        self.gpus.stock.release(name)
        self.gpus.quota.release(name)

    def _stop_thread(self, name: str) -> None:
        with self._lock:
            running = self._threads.pop(name, None)
        if running is not None:
            thread, events = running
            events.put(("stop",))
            if thread is not threading.current_thread():
                thread.join(timeout=10)

    # -- start, restore, reset, close -----------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            names = list(self._threads)
        for name in names:
            self._stop_thread(name)

    def recover(self) -> None:
        """Settle the stored resources: every hold and thread of the previous state dropped; then a
        RUNNING (or REBOOTING, UPDATING) resource holds its GPUs again and is RUNNING, a PROVISIONING one
        provisions again, a STOPPING one is deleted, an ERROR one stays."""
        self.close()
        with self._lock:
            known, self._known = self._known, set()
            self._outcomes.clear()
        for name in known:
            self.release(name)
        self.books.clear()
        for resource in self.store.list_resources():
            name, state = str(resource["name"]), str(resource.get("state"))
            if state == "STOPPING":
                self.stop(name)
                continue
            if state == "ERROR":
                continue
            needs = region_gpus(resource)
            with self._lock:
                self._known.add(name)
            self.gpus.quota.reserve(name, self.gpus.quota_needs(region_of(name), needs, "standard"))
            if state == "PROVISIONING":
                self.provision(name, None)
                continue
            self.gpus.stock.reserve(name, self.gpus.stock_needs(region_of(name), needs, "standard"))
            self._write(name, "RUNNING")
            self.books.open(name, capacity_of(resource))
