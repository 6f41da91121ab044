"""The service's clock: every wait the emulator times itself as Vertex AI (QUEUED, PENDING and
provisioning delays, the stockout wait, a flex-start job's ``max_wait_duration``, the Spot notice and
preemption timers, ``scheduling.timeout``) and every time it writes (a job's ``createTime`` ...
``endTime``, a Logging entry's ``timestamp``) is read from one ``ServiceClock`` per emulator.

With no scenario playing its compression is 1 and it reads the machine's clocks unchanged. A scenario
sets a compression (scenario seconds per real second): service time then runs that much faster, waits
last ``seconds / compression`` real seconds, and the wall time it writes runs ahead of the machine's
(a night played in minutes shows the night's times). When the scenario ends the compression is 1 again
and service time goes on from where it was, never backwards. Replica processes run in real time.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TypeVar

__all__ = ["RECHECK_S", "ServiceClock"]

_T = TypeVar("_T")
#: the longest real wait while a scenario has changed the pace: a wait re-reads the compression so
#: one begun before a change ends on time after it
RECHECK_S = 0.25
_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


class ServiceClock:
    """Service time: ``monotonic()`` (seconds, for waits), ``time_ns()`` / ``now_rfc3339()`` (the wall
    time written in the API and the logs); ``compression`` service seconds pass per real second."""

    def __init__(
        self, monotonic: Callable[[], float] = time.monotonic, wall_ns: Callable[[], int] = time.time_ns
    ) -> None:
        self._monotonic = monotonic
        self._wall_ns = wall_ns
        self._lock = threading.Lock()
        self._compression = 1.0
        self._real0 = 0.0  # real monotonic time of the last change of pace
        self._service0 = 0.0  # service monotonic time then
        self._changed = False  # False until a scenario changes the pace: the machine's clocks exactly

    @property
    def compression(self) -> float:
        with self._lock:
            return self._compression

    def set_compression(self, compression: float) -> None:
        """Run ``compression`` times faster from now on (1: real time), continuing from the time now."""
        if not compression > 0:
            raise ValueError(f"compression must be positive (got {compression!r})")
        with self._lock:
            real = self._monotonic()
            self._service0 = self._service0 + (real - self._real0) * self._compression
            self._real0 = real
            self._compression = float(compression)
            self._changed = True

    def monotonic(self) -> float:
        """Service seconds on a monotonic scale (``time.monotonic()`` until the pace changes)."""
        with self._lock:
            return self._service0 + (self._monotonic() - self._real0) * self._compression

    def _ahead_s(self) -> float:
        """How far service time has run ahead of real time."""
        with self._lock:
            real = self._monotonic()
            return self._service0 + (real - self._real0) * self._compression - real

    def time_ns(self) -> int:
        """Service wall time, nanoseconds since the epoch (``time.time_ns()`` until the pace changes)."""
        if not self._changed:
            return self._wall_ns()
        return self._wall_ns() + round(self._ahead_s() * 1e9)

    def now_rfc3339(self) -> str:
        """Service wall time as the API writes it: ``2026-01-02T03:04:05.123456Z``."""
        return datetime.fromtimestamp(self.time_ns() / 1e9, timezone.utc).strftime(_FORMAT)

    def real_s(self, service_s: float) -> float:
        """Real seconds that ``service_s`` service seconds last at the current pace."""
        return max(0.0, service_s) / self.compression

    def _timeout(self, service_s: float | None) -> float | None:
        if service_s is None:
            return None
        real = self.real_s(service_s)
        return min(real, RECHECK_S) if self._changed else real

    def wait(self, event: threading.Event, service_s: float) -> bool:
        """``event.wait`` for ``service_s`` service seconds: True when the event was set."""
        deadline = self.monotonic() + max(0.0, service_s)
        while True:
            left = deadline - self.monotonic()
            if left <= 0:
                return event.is_set()
            if event.wait(self._timeout(left)):
                return True

    def get(self, q: queue.Queue[_T], service_s: float | None) -> _T:
        """``q.get`` waiting up to ``service_s`` service seconds (None: for ever); ``queue.Empty`` when
        none came. A wait longer than ``RECHECK_S`` real seconds may end early with ``queue.Empty`` once
        a scenario has changed the pace: callers loop, reading their deadline again."""
        return q.get(timeout=self._timeout(service_s))
