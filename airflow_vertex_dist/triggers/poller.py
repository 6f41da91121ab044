"""One shared JobService poller per triggerer event loop and per (connection, project, location, kind).

Waiting triggers register the job they wait for; every poll cycle the poller makes ONE paged List call
for all of them -- filter ``labels.managed-by="airflow-vertex-dist" AND (state="JOB_STATE_QUEUED" OR
... every non-terminal state) AND create_time>="<oldest registered>"`` -- and fans each job's dict out
to the triggers waiting on it. A registered job missing from the list has left it (it ended, was
deleted, or is not ours: a job without the ``managed-by`` label is only ever polled by Get), so the
poller makes one Get for each such job. A cycle of N waiting jobs thus costs ``ceil(N / page_size)``
List calls plus one Get per job that changed to a terminal state (or is unmanaged) -- not N Gets;
when more than ten of them ended since the last cycle, one List of the ended ones instead of their Gets.

Cycles start at a fixed rate (``JobPoller.period``): as often as a budget of N / 100 + 2 calls per
poll interval allows in any window of one interval (the last cycle's calls being what the next one is
expected to cost), at most four times an interval and at least once. Few waiting jobs are therefore
looked at several times an interval, so a job's end reaches its trigger sooner, for a handful of
calls; the smallest ``poll_interval`` stays the longest a waiter goes between looks.
A newly registered job costs one Get (up to ten per cycle; a larger burst, such as a triggerer
starting with many deferred tasks, is served by one List without the create-time bound).

A converging waiter (``watch_job(converge=...)``: a task's labels) also gets, with each job dict a List
brought, the listed jobs of its run (``JobWatch.siblings``), from which its trigger converges
concurrent tries (``VertexJobTrigger``). Until its job was in a List without the create-time bound, the
cycle's List has none, so a job of the run older than every job waited on is in it too; the cycle
makes no Get for such a new waiter (the List finds it).

Transient API errors never end a wait: the hook retries them with backoff, and a cycle that still
fails is retried at the next interval with a growing delay. A job that no longer exists is reported
to its waiters as ``JobNotFoundError``; any other API error is passed to the waiters as is.

Use ``watch_job``::

    async with watch_job(name, conn_id="vertex_dist_default", poll_interval=10) as updates:
        async for job in updates:  # the full v1 JSON job dict after every poll
            ...

Pollers live in a registry keyed by event loop (a ``WeakKeyDictionary``), so each triggerer process
(one loop) has one poller per key, and a test's new event loop gets new pollers. A poller stops, and
closes its client, when its last waiter leaves.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterable, Sequence

from airflow_vertex_dist.common.rfc3339 import rfc3339_key
from airflow_vertex_dist.hooks.connection import DEFAULT_CONN_ID, RetryPolicy
from airflow_vertex_dist.hooks.labels import MANAGED_BY_LABEL, MANAGED_BY_VALUE, RUN_LABEL
from airflow_vertex_dist.hooks.poll_loop import PollLoop, is_transient
from airflow_vertex_dist.jobs.dicts import job_labels, job_state, parse_job_name
from airflow_vertex_dist.jobs.kinds import ACTIVE_STATES, TERMINAL_STATES
from airflow_vertex_dist.jobs.types import Job
from airflow_vertex_dist.triggers.poll_schedule import Known as _Known
from airflow_vertex_dist.triggers.poll_schedule import cycle_period, live_managed
from airflow_vertex_dist.triggers.poll_waiters import JobWatch, PollerKey
from airflow_vertex_dist.triggers.poll_waiters import Subscription as _Subscription

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "JobNotFoundError",
    "JobPoller",
    "JobWatch",
    "PollerKey",
    "active_pollers",
    "get_poller",
    "list_filter",
    "watch_job",
]

log = logging.getLogger(__name__)

#: Jobs a List page is asked for. A service may return fewer a page (AIP-158: it coerces a larger size
#: to its own maximum); the poller counts the pages it really called (``JobList.pages``).
DEFAULT_PAGE_SIZE = 1000
#: After a new waiter wakes the poller, wait this long so a burst of registrations shares one cycle.
REGISTRATION_SETTLE_S = 0.05
#: New waiters of one cycle fetched by Get; more than this and the cycle's List is not time-bounded.
NEW_JOBS_BY_GET = 10
#: Managed jobs that left the List in one cycle looked up by Get; more than this and one List of the
#: ended jobs (paged) fetches them instead.
ENDED_JOBS_BY_GET = 10
#: Concurrent Get calls of one poll cycle.
MAX_CONCURRENT_GETS = 10
#: The retry policy of the poller's hook: short deadline, the poller itself retries at the next cycle.
POLLER_RETRY = RetryPolicy(initial_s=0.5, maximum_s=5.0, deadline_s=30.0, rpc_timeout_s=30.0)


class JobNotFoundError(LookupError):
    """The job a trigger waits for does not exist (deleted, or never existed)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"job {name} does not exist")


def list_filter(oldest_create_time: str | None, *, ended: bool = False) -> str:
    """The List filter of one poll: our label, every non-terminal state (``ended``: every terminal
    one), created at/after the oldest."""
    states = " OR ".join(f'state="{state}"' for state in sorted(TERMINAL_STATES if ended else ACTIVE_STATES))
    text = f'labels.{MANAGED_BY_LABEL}="{MANAGED_BY_VALUE}" AND ({states})'
    if oldest_create_time:
        text += f' AND create_time>="{oldest_create_time}"'
    return text


class JobPoller(PollLoop):
    """Polls every registered job of one (connection, project, location, kind); see the module doc."""

    wake_settle_s = REGISTRATION_SETTLE_S

    def __init__(
        self,
        key: PollerKey,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook

        super().__init__(f"vertex-job-poller {key.project}/{key.location}/{key.kind}", log)
        self.key = key
        self.page_size = page_size
        self.hook = VertexJobsAsyncHook(
            key.conn_id,
            project_id=key.project,
            location=key.location,
            retry_policy=retry_policy or POLLER_RETRY,
            impersonation_chain=key.impersonation_chain or None,
        )
        self._subs: dict[str, set[_Subscription]] = {}
        self._known: dict[str, _Known] = {}
        #: the List / Get calls this poller made (for logs and tests)
        self.list_calls = 0
        self.get_calls = 0
        #: What the next cycle is expected to cost: the last one's List pages and its Gets of unmanaged
        #: jobs (a job that ended or is new is looked up once, not every cycle).
        self.last_cycle_calls = 1

    # -- registration ----------------------------------------------------------------------------
    def subscribe(self, name: str, interval: float, converge: dict[str, str] | None = None) -> _Subscription:
        if not interval > 0:
            raise ValueError(f"poll_interval: must be a positive number of seconds (got {interval!r})")
        if converge is not None and not converge.get(RUN_LABEL):
            raise ValueError(f"converge: the task's labels, with {RUN_LABEL!r} (got {converge!r})")
        sub = _Subscription(self, name, float(interval), dict(converge) if converge is not None else None)
        self._subs.setdefault(name, set()).add(sub)
        self._start()
        return sub

    def _unsubscribe(self, sub: _Subscription) -> None:
        subs = self._subs.get(sub.name)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.name]
                self._known.pop(sub.name, None)
        if not self._subs:
            registry = _REGISTRY.get(self._loop)
            if registry is not None and registry.get(self.key) is self:
                del registry[self.key]
            self._stop()

    @property
    def job_names(self) -> list[str]:
        return list(self._subs)

    # -- the loop (``PollLoop._run``) -------------------------------------------------------------
    def _has_waiters(self) -> bool:
        return bool(self._subs)

    def _interval(self) -> float:
        return min((sub.interval for subs in self._subs.values() for sub in subs), default=1.0)

    def period(self) -> float:
        """Seconds from the start of one cycle to the start of the next.

        The poll interval is the longest a waiter goes between looks at its job. Within it, the poller
        looks as often as the call budget allows: with N jobs waiting, N / 100 + 2 calls per interval,
        a cycle expected to cost what the last one did again (its List pages and the Gets of unmanaged
        jobs; a job that ended costs its one Get on top, as it always has). That is ``k`` cycles an
        interval, ``k`` the whole number of expected cycle costs the budget holds (at most
        ``MAX_CYCLES_PER_INTERVAL``), started ``interval / k`` apart plus ``SPACING_MARGIN``: cycles
        start a period after the previous one started (never sooner), so any window of one interval,
        wherever it falls, holds at most ``k`` cycle starts and its steady calls never pass the budget.
        A cycle that costs more than half the budget (many pages, or many unmanaged jobs) makes the
        period the interval, never more.
        """
        return cycle_period(self._interval(), len(self._subs), self.last_cycle_calls)

    def _delay_after(self, started: float) -> float:
        # cycles start at a fixed rate: the next one a period after this one started
        return max(0.0, self.period() - (self._loop.time() - started))

    def _failed(self, exc: Exception) -> None:
        self._broadcast(exc)

    def _stopped(self, exc: Exception) -> None:
        self._broadcast(exc)  # never leave waiters hanging on a dead poller

    async def _close(self) -> None:
        await self.hook.close()

    def _broadcast(self, exc: BaseException) -> None:
        for subs in list(self._subs.values()):
            for sub in list(subs):
                sub.deliver(exc)

    def _deliver(
        self, name: str, value: Job | BaseException, runs: dict[str, list[Job]] | None = None
    ) -> None:
        """Hand ``value`` to ``name``'s waiters; ``runs`` (listed jobs by run label): the List it came
        from, whose jobs of the same run converging waiters get with it."""
        if isinstance(value, dict):
            labels = job_labels(value)
            self._known[name] = _Known(
                managed=labels.get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE,
                create_time=str(value.get("createTime", "")),
                state=job_state(value),
            )
        for sub in list(self._subs.get(name, ())):
            if runs is not None and sub.converge is not None:
                sub.deliver(value, runs.get(sub.converge[RUN_LABEL], []))
            else:
                sub.deliver(value)

    async def poll_once(self) -> None:
        """One cycle: a List for the managed, non-terminal (or not yet seen) jobs; a Get for the rest."""
        names = list(self._subs)
        if not names:
            return
        listed: dict[str, Job] = {}
        unknown = [name for name in names if name not in self._known]
        live = live_managed(self._known, names)
        # A few new waiters are looked up by Get (learning their create time keeps the List bounded);
        # a burst of them (a triggerer start), or a converging waiter not yet checked (its job's
        # siblings may be older than the oldest job waited on), goes through one unbounded List instead.
        unbounded = len(unknown) > NEW_JOBS_BY_GET or self._unchecked(names)
        calls = 0
        if unbounded or live:
            oldest = None
            if not unbounded and all(k.create_time for k in live):
                oldest = min((k.create_time for k in live), key=rfc3339_key)
            jobs = await self.hook.list_jobs(
                self.key.kind, filter=list_filter(oldest), page_size=self.page_size
            )
            pages = max(1, jobs.pages)
            self.list_calls += pages
            calls += pages
            listed = {str(job.get("name")): job for job in jobs}
        runs = self._runs(listed.values()) if listed else None
        missing = [name for name in names if name not in listed]
        # what the next cycle will cost again: its List pages and the Gets of unmanaged jobs (polled by
        # Get every cycle); a job that left the list (ended) or is new costs its Get once, not per cycle
        steady_gets = sum(1 for name in missing if name in self._known and not self._known[name].managed)
        for name in names:
            if name in listed:
                if unbounded:
                    for sub in self._subs.get(name, ()):
                        sub.checked = True
                self._deliver(name, listed[name], runs)
        left = [
            name
            for name in missing
            if name in self._known
            and self._known[name].managed
            and self._known[name].create_time
            and self._known[name].state not in TERMINAL_STATES
        ]
        if len(left) > ENDED_JOBS_BY_GET:
            found = await self._list_ended(left)
            missing = [name for name in missing if name not in found]
        if missing:
            await self._get_each(missing)
        if not calls and live_managed(self._known, self._subs):
            calls = 1  # a cycle of Gets only (new waiters) learned live managed jobs: the next one Lists them
        self.last_cycle_calls = calls + steady_gets

    async def _list_ended(self, left: list[str]) -> set[str]:
        """Many managed jobs left the list at once (a wave of jobs ending): one List of our ended jobs
        created since the oldest of them costs a page where their Gets cost one call each. Delivers
        what it found, and returns those names."""
        oldest_left = min((self._known[name].create_time for name in left), key=rfc3339_key)
        ended = await self.hook.list_jobs(
            self.key.kind, filter=list_filter(oldest_left, ended=True), page_size=self.page_size
        )
        self.list_calls += max(1, ended.pages)
        found = {str(job.get("name")): job for job in ended}
        for name in left:
            if name in found:
                self._deliver(name, found[name])
        return set(found)

    async def _get_each(self, names: list[str]) -> None:
        """One Get per job of ``names`` (``MAX_CONCURRENT_GETS`` at once), each delivered; a transient
        error fails the cycle, any other is its job's waiters' to see."""
        semaphore = asyncio.Semaphore(MAX_CONCURRENT_GETS)

        async def get(name: str) -> None:
            async with semaphore:
                self.get_calls += 1
                try:
                    job = await self.hook.get_job_or_none(name)
                except Exception as exc:
                    if is_transient(exc):
                        raise
                    self._deliver(name, exc)
                    return
            self._deliver(name, job if job is not None else JobNotFoundError(name))

        await asyncio.gather(*(get(name) for name in names))

    def _unchecked(self, names: Iterable[str]) -> bool:
        """Whether a converging waiter of ``names`` still needs an unbounded List: one that was not in
        one yet while its job is unknown or live and ours (a job that ended, or is not ours, has no
        sibling to converge with)."""
        for name in names:
            known = self._known.get(name)
            if known is not None and (not known.managed or known.state in TERMINAL_STATES):
                continue
            if any(sub.converge is not None and not sub.checked for sub in self._subs.get(name, ())):
                return True
        return False

    def _runs(self, jobs: Iterable[Job]) -> dict[str, list[Job]] | None:
        """The listed jobs by run label, when a converging waiter is registered (else ``None``)."""
        if not any(sub.converge is not None for subs in self._subs.values() for sub in subs):
            return None
        runs: dict[str, list[Job]] = {}
        for job in jobs:
            run = job_labels(job).get(RUN_LABEL)
            if run:
                runs.setdefault(str(run), []).append(job)
        return runs


_REGISTRY: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[PollerKey, JobPoller]] = (
    weakref.WeakKeyDictionary()
)


def get_poller(key: PollerKey, *, page_size: int = DEFAULT_PAGE_SIZE) -> JobPoller:
    """The running loop's poller for ``key`` (created on first use)."""
    loop = asyncio.get_running_loop()
    pollers = _REGISTRY.setdefault(loop, {})
    poller = pollers.get(key)
    if poller is None:
        poller = pollers[key] = JobPoller(key, page_size=page_size)
    return poller


def active_pollers() -> list[JobPoller]:
    """The running loop's pollers (for logs and tests)."""
    return list(_REGISTRY.get(asyncio.get_running_loop(), {}).values())


def watch_job(
    job_name: str,
    *,
    conn_id: str = DEFAULT_CONN_ID,
    poll_interval: float = 10.0,
    page_size: int = DEFAULT_PAGE_SIZE,
    impersonation_chain: Sequence[str] = (),
    converge: dict[str, str] | None = None,
) -> JobWatch:
    """Wait on ``job_name`` through the shared poller of the running event loop.

    The project, location and kind come from the job name; ``conn_id`` gives the credentials and
    endpoint (``impersonation_chain``, when given, replaces the connection's). Pollers are shared by
    every waiter with the same connection, impersonation chain, project, location and kind; the poll
    interval is the smallest of their ``poll_interval``. ``converge`` (the task's labels,
    ``task_labels``) makes the watch give, with each listed update, the jobs of the same run
    (``JobWatch.siblings``); the first List it is served by is not bounded by create time.
    """
    name = parse_job_name(job_name)
    key = PollerKey(
        conn_id=conn_id,
        project=name.project,
        location=name.location,
        kind=name.kind,
        impersonation_chain=tuple(impersonation_chain),
    )
    return JobWatch(key, str(name), float(poll_interval), page_size, converge, subscribe=_subscribe)


def _subscribe(watch: JobWatch) -> _Subscription:
    """``watch``'s waiter, on the running loop's poller for its key."""
    return get_poller(watch.key, page_size=watch.page_size).subscribe(
        watch.job_name, watch.poll_interval, watch.converge
    )
