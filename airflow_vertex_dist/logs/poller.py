"""One shared Cloud Logging poller per triggerer event loop and per (connection, project, impersonation
chain): tasks that impersonate different service accounts read with their own credentials, never with
another task's.

Cloud Logging allows about 60 ``entries.list`` requests a minute per project, so triggers streaming
replica logs never call it themselves: they subscribe a job id (with their replica selection and a
``LogCursor``) to the loop's ``LogPoller``, which every interval makes ONE ``entries.list``
call for all of them -- filter ``resource.type="ml_job" AND (resource.labels.job_id="1" OR ...) AND
timestamp>="<oldest cursor>"`` (without the job ids when more than ``MAX_IDS_IN_FILTER`` jobs
stream: the lines of other jobs are then dropped here) -- follows its pages, and hands every line to
the subscribers of its job whose selection takes it and whose cursor it is after.

A cursor is the (timestamp, insert id) of the last line a subscriber received; lines come in
(timestamp, insert id) order, so a line is new exactly when it sorts after the cursor: nothing is
repeated across pages or cycles (each read starts at the oldest point the poller has read up to for
any subscriber, so a caught-up poller reads only new lines), and a subscriber that comes back with
its last cursor resumes where it stopped. Each read also leaves out the lines younger than
``[vertex_dist] log_settle_seconds`` (default ``DEFAULT_SETTLE_S``, filter ``timestamp<=``): Cloud
Logging can make an entry readable after newer ones, and a cursor past it would never take it; held
back until it has settled, such a line is read in its place. When a job ends, its stream waits for a
cycle that has read past the end (``LogPoller.read_through``).

Each job has a budget of lines per cycle, and a page too large for the transport is read again
smaller, or skipped with a marker line, never retried as it was (``logs.pages``).

Read calls are paced by a budget per event loop (a triggerer process runs one):
``[vertex_dist] log_reads_per_minute``, default 50, shared by every log poller of the loop.
RESOURCE_EXHAUSTED
and other transient errors back the poller off (doubling, up to ``MAX_BACKOFF_S``) and never
end a subscription.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow_vertex_dist._compat import ASYNC_TIMEOUT, conf
from airflow_vertex_dist.common.log_severity import SEVERITIES
from airflow_vertex_dist.common.rfc3339 import format_rfc3339_nanos, rfc3339_key
from airflow_vertex_dist.hooks.connection import DEFAULT_CONN_ID, RetryPolicy
from airflow_vertex_dist.hooks.logs import PRIMARY, LogLine, ReplicaSelection, jobs_filter, time_clauses
from airflow_vertex_dist.hooks.poll_loop import MAX_BACKOFF_S, PollLoop
from airflow_vertex_dist.logs.pages import (
    JOB_BYTES_PER_CYCLE,
    PageSizer,
    ReadBudget,
    line_cost,
    skipped_line,
    too_large,
)

__all__ = [
    "DEFAULT_READS_PER_MINUTE",
    "MAX_BACKOFF_S",
    "DEFAULT_SETTLE_S",
    "MAX_IDS_IN_FILTER",
    "LogCursor",
    "LogPoller",
    "LogPollerKey",
    "ReadBudget",
    "as_kwargs",
    "get_log_poller",
    "process_budget",
    "selection_takes",
    "settle_seconds",
]

log = logging.getLogger(__name__)

#: Cloud Logging's read quota is 60 a minute per project; leave room for a person in the console.
DEFAULT_READS_PER_MINUTE = 50
#: How old a line must be before a read takes it (``[vertex_dist] log_settle_seconds``): Cloud Logging can
#: make an entry readable after newer ones, and its own streaming read (``entries.tail``) holds entries
#: back 2 s by default "to prevent out of order results due to late arriving log entries"
#: (https://cloud.google.com/logging/docs/reference/v2/rest/v2/entries/tail, ``bufferWindow``).
DEFAULT_SETTLE_S = 2.0
#: Beyond this many streaming jobs the filter leaves the job ids out (a filter is at most 20,000 chars).
MAX_IDS_IN_FILTER = 300
#: Pages followed in one cycle; the rest is read at the next cycle (the cursors remember where).
MAX_PAGES_PER_CYCLE = 10
PAGE_SIZE = 1000
#: The poller's hook retries briefly; the poller itself retries at the next (backed-off) cycle.
LOG_POLLER_RETRY = RetryPolicy(initial_s=0.5, maximum_s=5.0, deadline_s=20.0, rpc_timeout_s=30.0)


@dataclass(frozen=True)
class LogCursor:
    """The last line a subscriber received: ``timestamp`` (RFC 3339, "" for none yet) and ``insert_id``."""

    timestamp: str = ""
    insert_id: str = ""

    def before(self, line: LogLine) -> bool:
        """Whether ``line`` sorts after this cursor (is new to its holder)."""
        if not self.timestamp:
            return True
        return (rfc3339_key(line.timestamp), line.insert_id) > (rfc3339_key(self.timestamp), self.insert_id)

    @classmethod
    def of(cls, line: LogLine) -> LogCursor:
        return cls(line.timestamp, line.insert_id)


def selection_takes(selection: ReplicaSelection, line: LogLine) -> bool:
    """Whether a subscriber with ``selection`` wants ``line`` (see ``stream_logs``)."""
    if selection == "all":
        return True
    if selection == "default":
        return line.replica == PRIMARY or SEVERITIES.get(line.severity, 0) >= SEVERITIES["WARNING"]
    return line.replica in selection


_BUDGETS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ReadBudget] = weakref.WeakKeyDictionary()


def process_budget() -> ReadBudget:
    """The running loop's read budget, from ``[vertex_dist] log_reads_per_minute``."""
    loop = asyncio.get_running_loop()
    budget = _BUDGETS.get(loop)
    if budget is None:
        per_minute = conf.getint("vertex_dist", "log_reads_per_minute", fallback=DEFAULT_READS_PER_MINUTE)
        budget = _BUDGETS[loop] = ReadBudget(per_minute)
    return budget


def settle_seconds() -> float:
    """``[vertex_dist] log_settle_seconds``: how old a line must be before a read takes it."""
    value = conf.getfloat("vertex_dist", "log_settle_seconds", fallback=DEFAULT_SETTLE_S)
    if not 0 <= value <= 60:
        raise ValueError(f"[vertex_dist] log_settle_seconds: must be between 0 and 60 (got {value!r})")
    return value


def settled_until(settle: float, now: float | None = None) -> str | None:
    """The newest timestamp a read made now takes (RFC 3339), or None when nothing is held back."""
    if settle <= 0:
        return None
    cut = (time.time() if now is None else now) - settle
    return format_rfc3339_nanos(int(cut * 1_000_000_000))


@dataclass(frozen=True)
class LogPollerKey:
    """What a log poller reads with: one poller (one reader, one set of credentials) per distinct key.

    ``impersonation_chain`` is the task's own chain (empty: the connection's): tasks that impersonate
    different accounts never share a reader, so no task reads logs with another's credentials.
    """

    conn_id: str
    project: str
    impersonation_chain: tuple[str, ...] = ()


class _LogSubscription:
    def __init__(
        self, poller: LogPoller, job_id: str, selection: ReplicaSelection, cursor: LogCursor, interval: float
    ) -> None:
        self.poller = poller
        self.job_id = job_id
        self.selection = selection
        self.cursor = cursor
        #: how far the poller has read for this subscriber (>= cursor: lines of other jobs, or not
        #: selected, move it too); the next read starts there
        self.position = cursor
        self.interval = interval
        self._lines: list[LogLine] = []
        self._ready = asyncio.Event()
        self.closed = False

    def offer(self, line: LogLine) -> None:
        if self.cursor.before(line) and selection_takes(self.selection, line):
            self._lines.append(line)
            self.cursor = LogCursor.of(line)
            self._ready.set()

    def mark(self, line: LogLine) -> None:
        """Hand over a marker line (``pages.skipped_line``) whatever the selection, and go on after it."""
        self._lines.append(line)
        self.cursor = self.position = LogCursor.of(line)
        self._ready.set()

    def take(self) -> list[LogLine]:
        """The lines received since the last take (possibly none), oldest first."""
        lines, self._lines = self._lines, []
        self._ready.clear()
        return lines

    async def wait(self, timeout: float | None = None) -> list[LogLine]:
        """The next lines, waiting up to ``timeout`` seconds for some."""
        try:
            await asyncio.wait_for(self._ready.wait(), timeout=timeout)
        except ASYNC_TIMEOUT:
            pass
        return self.take()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.poller._unsubscribe(self)


class LogPoller(PollLoop):
    """Reads the replica logs of every subscribed job of one (connection, project); see the module doc."""

    def __init__(self, key: LogPollerKey, *, budget: ReadBudget | None = None) -> None:
        from airflow_vertex_dist.hooks.logs import VertexLogsHook

        super().__init__(f"vertex-log-poller {key.project}", log)
        self.key = key
        self.hook = VertexLogsHook(
            key.conn_id,
            project_id=key.project,
            retry_policy=LOG_POLLER_RETRY,
            impersonation_chain=key.impersonation_chain or None,
        )
        self.budget = budget or process_budget()
        self.settle = settle_seconds()
        #: every line stamped at or before this (seconds since the epoch) has been read and handed out
        #: (the cut of the last cycle that read all its pages)
        self.horizon = 0.0
        self._subs: set[_LogSubscription] = set()
        #: entries.list calls (for logs and tests)
        self.read_calls = 0
        #: the page size, halved while pages are too large for the transport (``pages``)
        self.pages = PageSizer(PAGE_SIZE)

    def subscribe(
        self,
        job_id: str,
        *,
        selection: ReplicaSelection = "default",
        cursor: LogCursor | None = None,
        interval: float = 10.0,
    ) -> _LogSubscription:
        if not interval > 0:
            raise ValueError(f"log_poll_interval: must be a positive number of seconds (got {interval!r})")
        sub = _LogSubscription(self, job_id, selection, cursor or LogCursor(), float(interval))
        self._subs.add(sub)
        self._start()
        return sub

    def _unsubscribe(self, sub: _LogSubscription) -> None:
        self._subs.discard(sub)
        if not self._subs:
            registry = _REGISTRY.get(self._loop)
            if registry is not None and registry.get(self.key) is self:
                del registry[self.key]
            self._stop()

    async def read_through(self, when: float, timeout: float) -> bool:
        """Wait until a cycle has handed out every line stamped at or before ``when`` (seconds since
        the epoch): the settle window after it, then a cycle started at once. False after ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.horizon < when:
            left = deadline - loop.time()
            if left <= 0:
                return False
            early = when + self.settle - time.time()
            if early > 0:
                await asyncio.sleep(min(early, left))  # the settle window: time to pass, not a state
                continue
            self._wake.set()
            try:
                await asyncio.wait_for(self.next_cycle(), timeout=left)
            except ASYNC_TIMEOUT:
                return False
        return True

    # -- the loop (``PollLoop._run``) -------------------------------------------------------------
    def _has_waiters(self) -> bool:
        return bool(self._subs)

    def _interval(self) -> float:
        return min((sub.interval for sub in self._subs), default=10.0)

    def _failed(self, exc: Exception) -> None:
        raise exc  # stops the poller: streaming logs is best effort, never fails the waits that use it

    def _stopped(self, exc: Exception) -> None:
        pass  # the subscribers' waits go on without lines

    async def _close(self) -> None:
        await asyncio.to_thread(self.hook.close)

    def _filter(self, subs: Sequence[_LogSubscription], until: str | None = None) -> str:
        job_ids = {sub.job_id for sub in subs}
        since: str | None = None
        stamps = [sub.position.timestamp for sub in subs]
        if all(stamps):
            since = min(stamps, key=rfc3339_key)
        selections = {repr(sub.selection) for sub in subs}
        selection: ReplicaSelection = subs[0].selection if len(selections) == 1 else "all"
        if len(job_ids) > MAX_IDS_IN_FILTER:
            return " AND ".join(['resource.type="ml_job"', *time_clauses(since, until)])
        return jobs_filter(job_ids, since=since, selection=selection, until=until)

    async def poll_once(self) -> None:
        """One cycle: one ``entries.list`` call for every subscribed job, and its further pages; a job
        past its budget (``pages``) leaves the cycle's later reads, which then read the others only."""
        subs = list(self._subs)
        if not subs:
            return
        now = time.time()
        until = settled_until(self.settle, now) or format_rfc3339_nanos(int(now * 1_000_000_000))
        group, used = subs, {sub.job_id: 0 for sub in subs}
        text, token = self._filter(group, settled_until(self.settle, now)), ""
        for _ in range(MAX_PAGES_PER_CYCLE):
            await self.budget.acquire()
            self.read_calls += 1
            try:
                lines, token = await asyncio.to_thread(
                    self.hook.list_page, text, page_size=self.pages.size, page_token=token
                )
            except Exception as exc:
                if not too_large(exc):
                    raise
                if self.pages.shrink():
                    continue  # the same page again, smaller
                self._skip(group, until, exc)
                lines, token = [], ""
            else:
                self.pages.grow()
                self._hand_out(group, lines, used)
            over = {job for job, n in used.items() if n > JOB_BYTES_PER_CYCLE}
            rest = [sub for sub in group if sub.job_id not in over]
            if token and over and rest and len(rest) < len(group):
                group, token = rest, ""  # the others go on, from their own positions
                text = self._filter(group, settled_until(self.settle, now))
                continue
            if not token:
                if len(group) == len(subs):
                    self.horizon = max(self.horizon, now - self.settle)
                break

    def _hand_out(
        self, group: Sequence[_LogSubscription], lines: list[LogLine], used: dict[str, int]
    ) -> None:
        by_job: dict[str, list[_LogSubscription]] = {sub.job_id: [] for sub in group}
        for sub in group:
            by_job[sub.job_id].append(sub)
        for line in lines:
            subs = by_job.get(line.job_id, ())
            for sub in subs:
                sub.offer(line)
            if subs:
                used[line.job_id] += line_cost(line)
        if lines:
            last = LogCursor.of(lines[-1])
            for sub in group:
                if sub.position.before(lines[-1]):
                    sub.position = last

    def _skip(self, group: Sequence[_LogSubscription], until: str, exc: Exception) -> None:
        """A page no size could carry: every stream of the read goes on after ``until``, told so."""
        log.warning("A Cloud Logging page could not be read even one entry at a time: %s", exc)
        for sub in group:  # positions are at or before the last cut, so before this one
            sub.mark(skipped_line(sub.job_id, sub.position.timestamp, until, exc))


_REGISTRY: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[LogPollerKey, LogPoller]] = (
    weakref.WeakKeyDictionary()
)


def get_log_poller(
    project: str,
    *,
    conn_id: str = DEFAULT_CONN_ID,
    impersonation_chain: Sequence[str] = (),
    budget: ReadBudget | None = None,
) -> LogPoller:
    """The running loop's log poller for (``conn_id``, ``project``, ``impersonation_chain``), created on
    first use. Pollers of one loop share its read budget, whatever their key."""
    loop = asyncio.get_running_loop()
    pollers = _REGISTRY.setdefault(loop, {})
    key = LogPollerKey(conn_id=conn_id, project=project, impersonation_chain=tuple(impersonation_chain))
    poller = pollers.get(key)
    if poller is None:
        poller = pollers[key] = LogPoller(key, budget=budget)
    return poller


def as_kwargs(cursor: LogCursor) -> dict[str, Any]:
    """The cursor as a trigger's serialized kwargs carry it."""
    return {"log_timestamp": cursor.timestamp, "log_insert_id": cursor.insert_id}
