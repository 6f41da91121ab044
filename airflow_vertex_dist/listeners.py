"""Cancel a task's job when a user ends the task (or its run) by hand, rather than the task itself.

A deferred task waits in the triggerer, and Airflow (>= 3.3) calls the trigger's ``on_kill`` -- which
cancels the job -- when a user ends the task. But the triggerer only starts a trigger on its next loop
after the task deferred: a task marked failed or successful in that window (a second or two, more on
a busy triggerer) loses its trigger before it ever ran, so nothing would cancel its job, and it would
run on, billed, with no task waiting for it. Before Airflow 3.3 no trigger is told at all.

This listener closes that gap from the other side. For a task of ours that owns a job with
``cancel_on_kill=True`` -- it pushed ``{"name", "conn_id", "impersonation_chain"}`` under
``OWNER_XCOM_KEY`` -- it cancels that job unless it already ended or is being cancelled, with the
task's credentials: its connection and its own ``impersonation_chain`` (empty: the connection's), read
from the task instance's rendered template fields, never from the record. An XCom can be edited
through the REST API, so the record only names a candidate: the job is read first, and cancelled only
when its labels say it is this task instance's (``links.ownership_problem``); otherwise nothing is
sent and the refusal is logged.

* Airflow's REST API (and so the UI) fires ``on_task_instance_failed`` / ``on_task_instance_success``
  with ``previous_state=None`` for a task's state set by hand, in the API server's process (3.1 and
  later; from 3.3 also for each task a run marked by hand ends).
* Marking a whole run by hand fires ``on_dag_run_failed`` / ``on_dag_run_success`` (before 3.3 only
  these, with ``msg=""``); so does a ``dagrun_timeout``, in the scheduler. For every run end but the
  ones its tasks made by ending themselves (``RUN_ENDED_BY_ITS_TASKS``), the jobs every task of
  the run owns are cancelled unless ended.

The listeners a task's own end fires (``previous_state=RUNNING``, in the worker or the scheduler)
are ignored: there the operator (or the trigger) has already dealt with its job, and a retry that
should re-attach must find the job still running. A job the trigger cancels too is harmless: the
second look finds it cancelling or ended and sends nothing.

A listener never cancels in its caller (the user's request, or the scheduler's loop for a timed-out
run): it hands the work to ``CANCELLER``, a small pool of background threads with a bounded queue,
and returns. Reading the owner records and cancelling happen there, each run's (or task instance's)
cancels within ``RUN_BUDGET_S`` seconds in all, each cancel within ``CANCEL_RETRY`` (15 s at
most). With the API unreachable, a run with 40 owned jobs used to hold the scheduler's loop for
minutes; the listener call now returns at once (see the test). A cancel that did not fit the budget,
or the queue, is logged with the job's name. The plugin is registered through the ``airflow.plugins``
entry point (a provider-info ``plugins`` entry is only read with lazy provider discovery off).
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from airflow.listeners import hookimpl
from airflow.plugins_manager import AirflowPlugin

from airflow_vertex_dist._compat import rendered_task_fields, xcom_rows
from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.links import OWNER_XCOM_KEY, OwnedJob, ownership_problem, task_owned_job

__all__ = [
    "CANCELLER",
    "CANCEL_RETRY",
    "RUN_BUDGET_S",
    "OWNER_XCOM_KEY",
    "RUN_ENDED_BY_ITS_TASKS",
    "CancelWorker",
    "ManualStateListener",
    "VertexDistPlugin",
    "cancel_owned_job",
    "cancel_run_jobs",
    "owned_job",
]

log = logging.getLogger(__name__)

#: Bounds the cancel made while the user's request waits.
CANCEL_RETRY = RetryPolicy(initial_s=0.2, maximum_s=2.0, deadline_s=15.0, rpc_timeout_s=10.0)

#: Seconds all the cancels of one run (or one task instance) may take together.
RUN_BUDGET_S = 60.0


class CancelWorker:
    """Runs cancellations off the caller's thread: ``threads`` daemon threads (started on first use)
    take work from a queue of at most ``max_queued`` items. Daemon threads: a process that exits
    (a scheduler shutting down) is not held back by a cancel waiting on an unreachable API.

    Hand-written rather than ``concurrent.futures.ThreadPoolExecutor``, whose queue is unbounded and
    whose threads are joined at interpreter exit."""

    def __init__(self, threads: int = 2, max_queued: int = 1000) -> None:
        self.threads = threads
        self._queue: queue.Queue[tuple[str, Callable[[], object]]] = queue.Queue(maxsize=max_queued)
        self._lock = threading.Lock()
        self._started: list[threading.Thread] = []

    def submit(self, what: str, work: Callable[[], object]) -> bool:
        """Queue ``work`` (never blocks); ``False`` (and an error logged) when the queue is full."""
        with self._lock:
            if not self._started:
                for i in range(self.threads):
                    thread = threading.Thread(target=self._run, name=f"vertex-dist-cancel-{i}", daemon=True)
                    thread.start()
                    self._started.append(thread)
        try:
            self._queue.put_nowait((what, work))
        except queue.Full:
            log.error("%s: not cancelled, %d cancellations are already waiting", what, self._queue.maxsize)
            return False
        return True

    def _run(self) -> None:
        while True:
            what, work = self._queue.get()
            try:
                work()
            except Exception:
                log.exception("%s: cancelling failed", what)
            finally:
                self._queue.task_done()

    def wait_idle(self, timeout: float) -> bool:
        """Whether every queued cancellation ended within ``timeout`` seconds (for tests and tools)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True


#: The worker the listener hands its cancellations to.
CANCELLER = CancelWorker()


@dataclasses.dataclass(frozen=True)
class _TaskKey:
    """One task instance, in plain values (what crosses to the worker thread)."""

    dag_id: str
    task_id: str
    run_id: str
    map_index: int = -1


def _owner_records(dag_id: str, run_id: str, task_id: str | None = None, map_index: int = -1) -> list[Any]:
    """The owner records of one task instance, or of every task of a run, read from the metadata DB
    (``_compat.xcom_rows``: the API server and the scheduler have no Task SDK channel): each
    ``{"task_id", "map_index", "value"}``."""
    rows = xcom_rows(
        OWNER_XCOM_KEY,
        dag_id=dag_id,
        run_id=run_id,
        task_id=task_id,
        map_index=None if task_id is None else map_index,
        limit=1 if task_id is not None else 10_000,
    )
    return [{"task_id": row["task_id"], "map_index": row["map_index"], "value": row["value"]} for row in rows]


def _task_fields(key: _TaskKey) -> dict[str, Any] | None:
    """The task instance's rendered template fields (``_compat.rendered_task_fields``)."""
    return rendered_task_fields(key.dag_id, key.run_id, key.task_id, key.map_index)


def _owned(key: _TaskKey, value: Any, action: str) -> OwnedJob | None:
    """The job an owner record names, with the task's own connection and impersonation chain (its
    rendered template fields: no REST API call can change them), or None (and why, logged). The
    record's own ``conn_id`` and chain are not used: an API user may have edited them."""
    record = OwnedJob.from_record(value)
    if record is None:
        return None
    owned = task_owned_job(record.name, _task_fields(key))
    if owned is None:
        log.error(
            "%s: job %s not cancelled: the task instance has no stored rendered fields naming its "
            "connection (the connection an XCom names is never used)",
            action,
            record.name,
        )
    return owned


def owned_job(task_instance: Any) -> OwnedJob | None:
    """The job the task instance's try recorded it owns, with the task's own credentials, or ``None``.
    Whether the job really is the task instance's is checked against the job itself before a cancel
    (``_cancel``)."""
    ti = task_instance
    map_index = getattr(ti, "map_index", -1)
    key = _TaskKey(ti.dag_id, ti.task_id, ti.run_id, -1 if map_index is None else map_index)
    records = _owner_records(key.dag_id, key.run_id, key.task_id, key.map_index)
    return _owned(key, records[0]["value"], "owner record") if records else None


def _cancel(owned: OwnedJob, key: _TaskKey, action: str, deadline: float | None = None) -> str | None:
    """Cancel the job unless it ended (or is being cancelled) or is not the task instance's (its labels,
    ``links.ownership_problem``: refused and logged); the job's name when a cancel was sent.
    ``deadline`` (``time.monotonic()``) shortens ``CANCEL_RETRY`` to what is left of a budget."""
    from airflow_vertex_dist.jobs.dicts import job_state

    policy = CANCEL_RETRY
    if deadline is not None:
        left = max(0.1, deadline - time.monotonic())
        policy = dataclasses.replace(
            policy, deadline_s=min(policy.deadline_s, left), rpc_timeout_s=min(policy.rpc_timeout_s, left)
        )
    with owned.hook(retry_policy=policy) as hook:
        job = hook.get_job(owned.name)
        problem = ownership_problem(job, key.dag_id, key.task_id, key.run_id, key.map_index)
        if problem is not None:
            log.error("%s: not cancelling: %s", action, problem)
            return None
        job, sent = hook.cancel_unless_ended(owned.name)
    if not sent:
        log.info("%s: job %s is %s: not cancelling", action, owned.name, job_state(job))
        return None
    log.warning("%s: cancelled job %s (was %s)", action, owned.name, job_state(job))
    return owned.name


def cancel_owned_job(task_instance: Any, action: str, budget_s: float | None = None) -> str | None:
    """Cancel the job the task instance owns unless it ended; the job's name when a cancel was sent."""
    ti = task_instance
    map_index = getattr(ti, "map_index", -1)
    key = _TaskKey(ti.dag_id, ti.task_id, ti.run_id, -1 if map_index is None else map_index)
    records = _owner_records(key.dag_id, key.run_id, key.task_id, key.map_index)
    owned = _owned(key, records[0]["value"], action) if records else None
    budget = RUN_BUDGET_S if budget_s is None else budget_s
    return None if owned is None else _cancel(owned, key, action, time.monotonic() + budget)


def cancel_run_jobs(dag_run: Any, action: str, budget_s: float | None = None) -> list[str]:
    """Cancel every job a task of the run owns, unless it ended, within ``budget_s`` seconds in all;
    the names of the jobs cancelled. One failing cancel does not stop the others (it is logged); the
    jobs left when the budget is spent are logged, not cancelled."""
    budget_s = RUN_BUDGET_S if budget_s is None else budget_s
    deadline = time.monotonic() + budget_s
    cancelled = []
    for row in _owner_records(dag_run.dag_id, dag_run.run_id):
        key = _TaskKey(dag_run.dag_id, str(row["task_id"]), dag_run.run_id, int(row["map_index"]))
        owned = _owned(key, row["value"], action)
        if owned is None:
            continue
        if time.monotonic() >= deadline:
            log.error("%s: job %s not cancelled: the run's %gs budget is spent", action, owned.name, budget_s)
            continue
        try:
            name = _cancel(owned, key, action, deadline)
        except Exception:
            log.exception("%s: cancelling job %s failed", action, owned.name)
            continue
        if name is not None:
            cancelled.append(name)
    return cancelled


#: The scheduler's reasons for ending a run whose tasks all ended by themselves: nothing can be left
#: running. Any other end -- a state set by hand (``msg=""`` before Airflow 3.3), ``timed_out``
#: (``dagrun_timeout``; ``""`` on 3.1), ``task_failure`` (with ``fail_fast``, running siblings are
#: stopped) -- may leave a deferred task's job running with no trigger left to cancel it.
RUN_ENDED_BY_ITS_TASKS = frozenset({"success", "all_tasks_deadlocked"})


class ManualStateListener:
    """Cancels the jobs of tasks ended by a user's hand (or by their run's end), not by themselves.

    * ``on_task_instance_failed`` / ``_success`` with ``previous_state=None``: one task's state set by
      hand (and, on Airflow >= 3.3, each task a run marked by hand ended).
    * ``on_dag_run_failed`` / ``_success`` for a run not ended by its tasks (see
      ``RUN_ENDED_BY_ITS_TASKS``): before Airflow 3.3, marking a run by hand fires only these.
    """

    @hookimpl
    def on_task_instance_failed(self, previous_state: Any, task_instance: Any, error: Any) -> None:
        if previous_state is None:
            self._cancel(task_instance, "task marked failed")

    @hookimpl
    def on_task_instance_success(self, previous_state: Any, task_instance: Any) -> None:
        if previous_state is None:
            self._cancel(task_instance, "task marked success")

    @hookimpl
    def on_dag_run_failed(self, dag_run: Any, msg: str) -> None:
        if msg not in RUN_ENDED_BY_ITS_TASKS:
            self._cancel_run(dag_run, "failed", msg)

    @hookimpl
    def on_dag_run_success(self, dag_run: Any, msg: str) -> None:
        if msg not in RUN_ENDED_BY_ITS_TASKS:
            self._cancel_run(dag_run, "success", msg)

    @staticmethod
    def _cancel(task_instance: Any, action: str) -> None:
        try:  # only plain values cross to the worker thread, never the caller's ORM object
            map_index = getattr(task_instance, "map_index", -1)
            ti = SimpleNamespace(
                dag_id=str(task_instance.dag_id),
                task_id=str(task_instance.task_id),
                run_id=str(task_instance.run_id),
                map_index=-1 if map_index is None else int(map_index),
            )
            what = f"{ti.dag_id}.{ti.task_id} run {ti.run_id}: {action}"
            CANCELLER.submit(what, lambda: cancel_owned_job(ti, what))
        except Exception:  # a listener must never break the user's request
            log.exception("%s: cancelling the job of %r failed", action, task_instance)

    @staticmethod
    def _cancel_run(dag_run: Any, state: str, msg: str) -> None:
        try:
            run = SimpleNamespace(dag_id=str(dag_run.dag_id), run_id=str(dag_run.run_id))
            what = f"{run.dag_id} run {run.run_id}: run {state} ({msg or 'set by hand'})"
            CANCELLER.submit(what, lambda: cancel_run_jobs(run, what))
        except Exception:  # nor the scheduler's loop
            log.exception("run %s (%s): cancelling its jobs failed", state, msg)


class VertexDistPlugin(AirflowPlugin):
    """Registers ``ManualStateListener`` (the ``airflow.plugins`` entry point names this class)."""

    name = "airflow_vertex_dist"
    listeners = [ManualStateListener()]
