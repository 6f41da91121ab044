"""Faults a running CustomJob's replicas meet: injected crashes and the Spot preemption timers.

- ``Faults.crash_replicas`` (globs on replica keys): a matching replica is SIGKILLed
  ``crash_after_s`` after its first start and reported with exit code ``crash_exit_code`` (a crash
  is injected once per replica, so a restart can be rehearsed). Faults are re-read while a job
  runs, so a change at runtime applies to running jobs (``crash_due``).
- A SPOT job's primary is preempted ``Capacity.spot_preempt_after_s`` after each start, and any
  replica at ``spot_preemptions_per_hour`` (``spot_due``); the driver then preempts it
  (custom_job.py).

Both return how long the driver may wait before it looks again (at most ``WAKE_S``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection

from vertex_emulator.capacity.ledger import GpuCapacity
from vertex_emulator.core.config import Faults
from vertex_emulator.runtime import procs
from vertex_emulator.runtime.replica_slots import Slot

__all__ = ["WAKE_S", "crash_due", "spot_due"]

WAKE_S = 0.25  # how often a running job re-reads the faults


def crash_due(slots: Collection[Slot], faults: Faults, now: float) -> float:
    """Kill replicas the faults select; seconds until the next scheduled crash (or WAKE_S)."""
    with faults.lock:
        patterns = list(faults.crash_replicas)
        after = faults.crash_after_s
    wait = WAKE_S
    if not patterns:
        return wait
    for slot in slots:
        if slot.state != "RUNNING" or slot.crash_fired or slot.proc is None:
            continue
        if not any(fnmatch.fnmatchcase(slot.replica.key, p) for p in patterns):
            continue
        due = slot.started + after - now
        if due <= 0:
            slot.crash_fired = slot.crashed = True
            procs.crash(slot.proc)
        else:
            wait = min(wait, due)
    return wait


def spot_due(
    slots: Collection[Slot], gpus: GpuCapacity, now: float, last_look: float
) -> tuple[str | None, float]:
    """The replica the Spot settings preempt now (the primary ``spot_preempt_after_s`` after each
    start; any replica at ``spot_preemptions_per_hour``), and seconds until the timer is due."""
    settings = gpus.settings
    with settings.lock:
        after = settings.spot_preempt_after_s
    wait = WAKE_S
    primary = next((s for s in slots if s.replica.is_primary), None)
    if after is not None and primary is not None and primary.state == "RUNNING":
        due = primary.started + after - now
        if due <= 0 and primary.preempt_fired != primary.generation:
            primary.preempt_fired = primary.generation
            return primary.replica.key, wait
        if due > 0:
            wait = min(wait, due)
    for slot in slots:
        if slot.state == "RUNNING" and gpus.draw_preemption(now - last_look):
            return slot.replica.key, wait
    return None, wait
