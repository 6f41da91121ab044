"""The waiter side of the shared job poller (``triggers.poller``): ``PollerKey`` (which poller),
``Subscription`` (one waiter's mailbox: the latest job dict or error, never a backlog) and ``JobWatch``
(the ``async with`` handle ``watch_job`` returns)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from airflow_vertex_dist.jobs.kinds import JobKind
from airflow_vertex_dist.jobs.types import Job

__all__ = ["JobWatch", "PollerKey", "Subscription"]


@dataclass(frozen=True)
class PollerKey:
    conn_id: str
    project: str
    location: str
    kind: JobKind
    impersonation_chain: tuple[str, ...] = ()


class _Poller(Protocol):
    """The poller a subscription leaves when it closes."""

    def _unsubscribe(self, sub: Subscription) -> None: ...


class Subscription:
    """One waiter on one job: holds the latest job dict (or error) until the waiter takes it.

    A converging waiter (``converge``: the task's labels, ``task_labels``) also gets, with each job
    dict the List brought, the listed jobs of the same run (``siblings``, set by ``next``); its first
    such List is one without the create-time bound (``checked`` once its job was in one), so a job
    older than its own is in it too."""

    def __init__(
        self, poller: _Poller, name: str, interval: float, converge: dict[str, str] | None = None
    ) -> None:
        self.poller = poller
        self.name = name
        self.interval = interval
        self.converge = converge
        self.checked = False
        #: the jobs of this run listed with the value ``next`` returned last (converging waiters only;
        #: empty when that value came from a Get)
        self.siblings: list[Job] = []
        self._value: Job | BaseException | None = None
        self._value_siblings: list[Job] = []
        self._ready = asyncio.Event()
        self.closed = False

    def deliver(self, value: Job | BaseException, siblings: list[Job] | None = None) -> None:
        # Latest wins: a slow waiter sees the newest state, never a backlog.
        self._value = value
        self._value_siblings = siblings or []
        self._ready.set()

    async def next(self) -> Job:
        await self._ready.wait()
        self._ready.clear()
        value, self._value = self._value, None
        self.siblings, self._value_siblings = self._value_siblings, []
        if isinstance(value, BaseException):
            raise value
        assert value is not None
        return value

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.poller._unsubscribe(self)


class JobWatch:
    """``async with`` registration of one waiter; iterate it for the job dict after every poll."""

    def __init__(
        self,
        key: PollerKey,
        job_name: str,
        poll_interval: float,
        page_size: int,
        converge: dict[str, str] | None = None,
        *,
        subscribe: Callable[[JobWatch], Subscription],
    ) -> None:
        self.key = key
        self.job_name = job_name
        self.poll_interval = poll_interval
        self.page_size = page_size
        self.converge = converge
        self._subscribe = subscribe
        self._sub: Subscription | None = None

    async def __aenter__(self) -> JobWatch:
        self._sub = self._subscribe(self)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._sub is not None:
            self._sub.close()
            self._sub = None

    async def next(self) -> Job:
        """The job after the next poll (raises ``JobNotFoundError`` or the API error)."""
        if self._sub is None:
            raise RuntimeError("JobWatch.next() outside its 'async with' block")
        return await self._sub.next()

    @property
    def siblings(self) -> list[Job]:
        """With ``converge``: the listed jobs of the run of the job ``next`` returned last (its own
        included), when a List brought it; empty when a Get did."""
        return self._sub.siblings if self._sub is not None else []

    def __aiter__(self) -> AsyncIterator[Job]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Job]:
        while True:
            yield await self.next()
