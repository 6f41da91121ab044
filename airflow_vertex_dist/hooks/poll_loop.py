"""The loop both shared pollers of a triggerer run: the job poller (``triggers/poller.py``) and the
replica log poller (``logs/poller.py``).

A poller runs one task on its event loop while it has waiters: a cycle (``poll_once``), then a wait
until the next cycle is due or a new waiter wakes it. A cycle that fails with a transient API error
(``is_transient``) is retried later, the delay doubling with each consecutive failure up to
``MAX_BACKOFF_S`` (or the interval, if longer); any other error of a cycle goes to ``_failed`` (the job
poller hands it to its waiters; the log poller, best effort, stops). An error out of the loop itself is
a bug: it is logged and handed to ``_stopped``, so no waiter hangs on a dead poller. The task closes the
poller's client when it ends; it is cancelled when the last waiter leaves (``_stop``).
"""

from __future__ import annotations

import abc
import asyncio
import logging

from airflow_vertex_dist._compat import ASYNC_TIMEOUT
from airflow_vertex_dist.hooks.off_loop import load_clients
from airflow_vertex_dist.hooks.retry_warnings import EmulatorNotRunningError

__all__ = ["MAX_BACKOFF_S", "PollLoop", "backoff", "is_transient"]

#: Transient failures back a poller off up to this many seconds (or its interval, if longer).
MAX_BACKOFF_S = 60.0


def is_transient(exc: BaseException) -> bool:
    """Whether a failed cycle is retried (the hooks' transient errors, a retry deadline, a timeout, and
    an emulator that is not running: a deferred task's wait outlives an emulator's restart, and each
    cycle's warning says how to start it)."""
    from google.api_core.exceptions import RetryError

    from airflow_vertex_dist.hooks._clients import is_transient as hook_is_transient

    return hook_is_transient(exc) or isinstance(exc, (RetryError, EmulatorNotRunningError, *ASYNC_TIMEOUT))


def backoff(interval: float, failures: int) -> float:
    """The delay after ``failures`` consecutive transient failures: doubling, capped."""
    return min(interval * 2.0**failures, max(interval, MAX_BACKOFF_S))


class PollLoop(abc.ABC):
    """Registration, wake-up, backoff, error hand-out and close of one shared poller; see the module doc."""

    #: After new waiters wake the loop, wait this long so a burst of registrations shares one cycle.
    wake_settle_s = 0.0

    def __init__(self, description: str, logger: logging.Logger) -> None:
        self.description = description
        self._logger = logger
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._cycle_done = asyncio.Event()
        #: completed cycles, and consecutive cycles failed with a transient error (for logs and tests)
        self.cycles = 0
        self.failures = 0

    # -- what a poller defines ---------------------------------------------------------------------
    @abc.abstractmethod
    def _has_waiters(self) -> bool: ...

    @abc.abstractmethod
    def _interval(self) -> float:
        """The poll interval now (the smallest of the waiters')."""

    @abc.abstractmethod
    async def poll_once(self) -> None:
        """One cycle."""

    @abc.abstractmethod
    def _failed(self, exc: Exception) -> None:
        """A cycle failed with an error that is not transient (raise it to stop the loop)."""

    @abc.abstractmethod
    def _stopped(self, exc: Exception) -> None:
        """The loop stopped on a bug."""

    @abc.abstractmethod
    async def _close(self) -> None:
        """Close the poller's client (the loop's task is ending)."""

    def _delay_after(self, started: float) -> float:
        """Seconds from the end of a successful cycle (started at loop time ``started``) to the next."""
        return self._interval()

    # -- the shared part ---------------------------------------------------------------------------
    def _start(self) -> None:
        """A waiter registered: run the loop if it is not running, and start a cycle now."""
        if self._task is None or self._task.done():
            self._task = self._loop.create_task(self._run(), name=self.description)
        self._wake.set()  # a new waiter gets its first look now, not an interval later

    def _stop(self) -> None:
        """The last waiter left."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def next_cycle(self) -> int:
        """Wait until the next cycle completes; returns the cycle count."""
        await self._cycle_done.wait()
        return self.cycles

    async def _run(self) -> None:
        try:
            await load_clients()  # off the loop; is_transient below then imports nothing new
            while self._has_waiters():
                self._wake.clear()
                started = self._loop.time()
                try:
                    await self.poll_once()
                    delay = self._delay_after(started)
                    self.failures = 0
                except Exception as exc:
                    delay = self._interval()
                    if not is_transient(exc):
                        self._failed(exc)
                    else:
                        self.failures += 1
                        delay = backoff(delay, self.failures)
                        self._logger.warning(
                            "%s: a cycle failed with a transient error (%s); next try in %.1fs",
                            self.description,
                            exc,
                            delay,
                        )
                self.cycles += 1
                done, self._cycle_done = self._cycle_done, asyncio.Event()
                done.set()
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=delay)
                except ASYNC_TIMEOUT:
                    continue
                if self.wake_settle_s > 0:
                    await asyncio.sleep(self.wake_settle_s)  # a burst of registrations: one cycle
        except Exception as exc:  # a bug, or an error the poller chose to stop on
            self._logger.exception("%s stopped", self.description)
            self._stopped(exc)
        finally:
            await self._close()
