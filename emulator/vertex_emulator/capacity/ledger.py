"""The emulator's GPU books: quota used and free capacity held by the jobs running, Spot preemption.

One ``GpuCapacity`` per emulator, shared by the service (Create refuses a job over its quota) and the
drivers (a job waits QUEUED for quota, PENDING for free GPUs; a Spot job is preempted). The rules and
texts, with their sources, are in gpus.py; the settings are ``config.Capacity``, read at each
request, so a change through ``/emulator/capacity`` applies at once (``changed`` wakes the jobs that
wait).

Each book (``Ledger``) counts what jobs hold per key under a limit read from the settings (None:
unlimited) and grants first come, first served per key: a job is not passed over for ever by smaller
ones that arrive after it. A job takes everything it needs at once or nothing.

* quota keys ``(region, accelerator, "on-demand" | "preemptible")``: STANDARD jobs count against
  ``quota``, SPOT and FLEX_START jobs against ``preemptible_quota``;
* capacity keys ``(region, accelerator, provisioning)``: ``stock``, ``spot_stock``,
  ``flex_start_stock``.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable, Mapping
from typing import Any

from vertex_emulator.capacity.gpus import Provisioning, quota_message, quota_metric
from vertex_emulator.capacity.settings import update_capacity
from vertex_emulator.core.config import Capacity, Faults
from vertex_emulator.core.errors import ApiError

__all__ = ["GpuCapacity", "Key", "Ledger"]

#: A book's key: (region, accelerator type, kind).
Key = tuple[str, str, str]


class Ledger:
    """Counts held per key by jobs (``owner``), under limits ``limit_of(key)`` (None: unlimited)."""

    def __init__(self, limit_of: Callable[[Key], int | None]) -> None:
        self.limit_of = limit_of
        self._lock = threading.Lock()
        self._held: dict[str, dict[Key, int]] = {}
        self._line: dict[str, tuple[dict[Key, int], Callable[[], None]]] = {}  # arrival order
        self._peak: dict[Key, int] = {}

    def _in_use(self, key: Key) -> int:
        return sum(needs.get(key, 0) for needs in self._held.values())

    def in_use(self, key: Key) -> int:
        with self._lock:
            return self._in_use(key)

    def holders(self) -> list[str]:
        """The owners holding something now (not those in line)."""
        with self._lock:
            return list(self._held)

    def acquire(self, owner: str, needs: Mapping[Key, int], wake: Callable[[], None]) -> list[Key]:
        """Take ``needs`` for ``owner``: ``[]`` when granted (or already held), else the keys it is short
        of; the owner is then in line (once) and ``wake()`` is called whenever it may try again."""
        with self._lock:
            if owner in self._held:
                return []
            self._line.setdefault(owner, (dict(needs), wake))
            ahead: set[Key] = set()
            for name, (other, _) in self._line.items():
                if name == owner:
                    break
                ahead.update(other)
            short = []
            for key, count in needs.items():
                limit = self.limit_of(key)
                if limit is None:
                    continue
                if key in ahead or self._in_use(key) + count > limit:
                    short.append(key)
            if short:
                return short
            del self._line[owner]
            self._held[owner] = dict(needs)
            for key in needs:
                self._peak[key] = max(self._peak.get(key, 0), self._in_use(key))
            waiting = [wake_next for _, wake_next in self._line.values()]
        for wake_next in waiting:  # the next in line may fit in what is left
            wake_next()
        return []

    def reserve(self, owner: str, needs: Mapping[Key, int]) -> list[Key]:
        """Check and take ``needs`` for ``owner`` in one step (under the book's lock, so concurrent
        callers cannot all pass the check): ``[]`` when taken, else the keys over their limit beside
        what is held already. Never puts the owner in line; ``acquire`` grants at once what
        ``reserve`` took."""
        with self._lock:
            short = []
            for key, count in needs.items():
                limit = self.limit_of(key)
                if limit is not None and self._in_use(key) + count > limit:
                    short.append(key)
            if short:
                return short
            self._held[owner] = dict(needs)
            for key in needs:
                self._peak[key] = max(self._peak.get(key, 0), self._in_use(key))
        return []

    def rename(self, owner: str, new: str) -> None:
        """What ``owner`` holds is ``new``'s from now on (a reservation made before a job had a name)."""
        with self._lock:
            held = self._held.pop(owner, None)
            if held is not None:
                self._held[new] = held

    def release(self, owner: str) -> None:
        """Free what ``owner`` holds and take it out of line."""
        with self._lock:
            freed = self._held.pop(owner, None) is not None
            left = self._line.pop(owner, None) is not None
            waiting = [wake for _, wake in self._line.values()] if freed or left else []
        for wake in waiting:
            wake()

    def changed(self) -> None:
        """The limits changed: every job in line tries again."""
        with self._lock:
            waiting = [wake for _, wake in self._line.values()]
        for wake in waiting:
            wake()

    def reset_peaks(self) -> None:
        """The most in use at once counts again from what is held now."""
        with self._lock:
            self._peak = {key: self._in_use(key) for key in self._peak if self._in_use(key)}

    def rows(self, keys: set[Key]) -> list[dict[str, Any]]:
        """``{"key", "limit", "in_use", "peak", "waiting"}`` for ``keys`` and every key held or awaited."""
        with self._lock:
            every = set(keys) | self._peak.keys()
            for needs, _ in self._line.values():
                every.update(needs)
            rows = []
            for key in sorted(every):
                rows.append(
                    {
                        "key": key,
                        "limit": self.limit_of(key),
                        "in_use": self._in_use(key),
                        "peak": self._peak.get(key, 0),
                        "waiting": [name for name, (needs, _) in self._line.items() if key in needs],
                    }
                )
        return rows


def _get(table: Mapping[str, Mapping[str, int]], region: str, accelerator: str) -> int | None:
    counts = table.get(region)
    return None if counts is None else counts.get(accelerator)


class GpuCapacity:
    """The quota and capacity books and the Spot jobs running, over ``settings`` (read live)."""

    def __init__(self, settings: Capacity | None = None, faults: Faults | None = None) -> None:
        self.settings = settings if settings is not None else Capacity()
        self.faults = faults
        self.quota = Ledger(self._quota_limit)
        self.stock = Ledger(self._stock_limit)
        self._lock = threading.Lock()
        self._spot: dict[str, Callable[[str], bool]] = {}
        self._seed: int | None = None
        self._rng = random.Random()

    # -- limits, read from the settings at each request -----------------------------------------

    def _quota_limit(self, key: Key) -> int | None:
        region, accelerator, kind = key
        with self.settings.lock:
            table = self.settings.preemptible_quota if kind == "preemptible" else self.settings.quota
            return _get(table, region, accelerator)

    def _stock_limit(self, key: Key) -> int | None:
        region, accelerator, kind = key
        with self.settings.lock:
            table = {
                "standard": self.settings.stock,
                "spot": self.settings.spot_stock,
                "flex_start": self.settings.flex_start_stock,
            }[kind]
            return _get(table, region, accelerator)

    # -- what a job needs ------------------------------------------------------------------------

    @staticmethod
    def quota_needs(region: str, gpus: Mapping[str, int], how: Provisioning) -> dict[Key, int]:
        kind = "on-demand" if how == "standard" else "preemptible"
        return {(region, accelerator, kind): count for accelerator, count in gpus.items()}

    @staticmethod
    def stock_needs(region: str, gpus: Mapping[str, int], how: Provisioning) -> dict[Key, int]:
        return {(region, accelerator, how): count for accelerator, count in gpus.items()}

    @staticmethod
    def metric(key: Key) -> str:
        """The quota metric of a quota key."""
        return quota_metric(key[1], preemptible=key[2] == "preemptible")

    def create_problem(self, region: str, gpus: Mapping[str, int], how: Provisioning) -> str | None:
        """The RESOURCE_EXHAUSTED text for a Create whose job exceeds a quota limit by itself (or, with
        ``over_quota = "refuse"``, beside the jobs running), else None. Takes nothing: a Create that
        will run the job admits it with ``admit``."""
        return self.admit(region, gpus, how, None)

    def admit(self, region: str, gpus: Mapping[str, int], how: Provisioning, owner: str | None) -> str | None:
        """``create_problem``, and with ``over_quota = "refuse"`` the job's quota taken for ``owner`` (when
        given) in the same step as the check: of many concurrent Creates, exactly those that fit are
        admitted (the quota book's lock holds the check and the reservation together). The reservation
        is the job's own from then on (``Ledger.rename`` to its name; its driver frees it as it ends)."""
        with self.settings.lock:
            refuse = self.settings.over_quota == "refuse"
        needs = self.quota_needs(region, gpus, how)
        if owner is not None and refuse:
            over = self.quota.reserve(owner, needs)
        else:  # a check only: the job waits in line for its quota when it runs (``over_quota = "queue"``)
            over = [
                key
                for key, count in needs.items()
                if (limit := self._quota_limit(key)) is not None
                and (count > limit or (refuse and self.quota.in_use(key) + count > limit))
            ]
        return quota_message([self.metric(key) for key in over]) if over else None

    def changed(self) -> None:
        """The settings changed: jobs waiting for quota or capacity try again."""
        self.quota.changed()
        self.stock.changed()

    def update(self, changes: Any) -> None:
        """Validate and apply a partial change of the settings (a ``CapacityError`` naming the field),
        then wake the jobs waiting: the one way a change arrives at runtime (the admin API, a scenario)."""
        update_capacity(self.settings, changes)
        self.changed()

    def reset(self, settings: Any) -> None:
        """Every setting replaced by ``settings`` (a whole JSON object, validated), the peaks counted
        again from now and the Spot draws started again from the seed; the jobs waiting wake."""
        update_capacity(self.settings, settings)
        self.quota.reset_peaks()
        self.stock.reset_peaks()
        with self._lock:
            self._seed, self._rng = None, random.Random()
        self.changed()

    # -- Spot ------------------------------------------------------------------------------------

    def register_spot(self, job: str, preempt: Callable[[str], bool]) -> None:
        """Job ``job`` runs on Spot VMs; ``preempt(replica)`` asks its driver to preempt a replica."""
        with self._lock:
            self._spot[job] = preempt

    def unregister_spot(self, job: str) -> None:
        with self._lock:
            self._spot.pop(job, None)

    def preempt(self, job: str, replica: str) -> None:
        """Preempt ``replica`` of the running Spot job ``job`` now (an ``ApiError`` when it cannot be)."""
        with self._lock:
            preempt = self._spot.get(job)
        if preempt is None:
            raise ApiError(
                "FAILED_PRECONDITION",
                f"job: {job} is not running on Spot VMs (only a RUNNING job with scheduling.strategy SPOT "
                "can be preempted)",
            )
        if not preempt(replica):
            raise ApiError("NOT_FOUND", f"replica: {job} has no replica {replica!r}")

    def draw_preemption(self, seconds: float) -> bool:
        """Whether a Spot replica running for ``seconds`` more is preempted, at
        ``spot_preemptions_per_hour`` (seeded with ``Faults.seed``)."""
        with self.settings.lock:
            rate = self.settings.spot_preemptions_per_hour
        if rate <= 0 or seconds <= 0:
            return False
        seed = None
        if self.faults is not None:
            with self.faults.lock:
                seed = self.faults.seed
        with self._lock:
            if seed != self._seed:
                self._seed, self._rng = seed, random.Random(seed)
            return self._rng.random() < 1.0 - math.exp(-rate * seconds / 3600.0)

    # -- views -----------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The books for ``/emulator/stats``: per key its limit (None: unlimited), GPUs in use now, the
        most ever in use at once, and the jobs waiting; and the Spot jobs running."""
        with self.settings.lock:
            settings = self.settings
            quota_tables = (("on-demand", settings.quota), ("preemptible", settings.preemptible_quota))
            quota_keys = {
                (region, accelerator, kind)
                for kind, table in quota_tables
                for region, counts in table.items()
                for accelerator in counts
            }
            stock_keys = {
                (region, accelerator, kind)
                for kind, table in (
                    ("standard", self.settings.stock),
                    ("spot", self.settings.spot_stock),
                    ("flex_start", self.settings.flex_start_stock),
                )
                for region, counts in table.items()
                for accelerator in counts
            }
        quota = []
        for row in self.quota.rows(quota_keys):
            key = row.pop("key")
            quota.append({"region": key[0], "accelerator": key[1], "metric": self.metric(key), **row})
        stock = []
        for row in self.stock.rows(stock_keys):
            region, accelerator, kind = row.pop("key")
            stock.append({"region": region, "accelerator": accelerator, "provisioning": kind, **row})
        with self._lock:
            spot = sorted(self._spot)
        return {"quota": quota, "stock": stock, "spot_jobs": spot}
