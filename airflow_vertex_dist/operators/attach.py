"""How a training or tuning task finds its job again or creates it, and cancels it (the module doc of
``airflow_vertex_dist.operators.job`` tells the whole try).

``JobAttacher`` holds the adoption rules of one try: the job named in Airflow's task
state (``task_state_store``, Airflow >= 3.3), then the hook's find-or-create by run labels, spec
fingerprint and retry budget (``find_or_create``); the
job's link and owner record in XCom; the check that the task instance is still running once the
owner record is pushed; and the job's cancellation (``cancel_on_kill``). The operator owns one
(``VertexJobOperator.attacher``, made on first use); what it needs of the operator is ``AttachHost``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from airflow_vertex_dist._compat import AirflowException
from airflow_vertex_dist.hooks.labels import (
    BUDGET_LABEL,
    SPEC_LABEL,
    retry_budget,
    run_labels,
    spec_fingerprint,
    task_labels,
)
from airflow_vertex_dist.jobs.dicts import REATTACHABLE_STATES, IfExists, job_state, short_state
from airflow_vertex_dist.jobs.kinds import ACTIVE_STATES, TERMINAL_STATES, JobKind
from airflow_vertex_dist.jobs.outputs import LINK_XCOM_KEY
from airflow_vertex_dist.links import OWNER_XCOM_KEY, OwnedJob

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
    from airflow_vertex_dist.jobs.output_types import JobLink
    from airflow_vertex_dist.jobs.types import Job

__all__ = [
    "FIRST_TRY_RUN_TYPES",
    "STATE_KEY",
    "AttachHost",
    "JobAttacher",
    "budget_of",
    "first_try",
    "labels_of",
]

#: task_state_store key of the job name (the ``external_id_key`` of ResumableJobMixin).
STATE_KEY = "vertex_job_name"

#: The DAG run types whose try 1 skips find-or-create's look-up (``first_try``):
#: their run ids are made by Airflow, once. Not ``manual`` nor ``operator_triggered``: a caller's id.
FIRST_TRY_RUN_TYPES = frozenset({"scheduled", "backfill", "asset_triggered", "asset_materialization"})


def labels_of(context: Context) -> dict[str, str]:
    """The run labels of the task instance of ``context`` (``run_labels``)."""
    ti = context["ti"]
    map_index = getattr(ti, "map_index", -1)
    return run_labels(ti.dag_id, ti.task_id, ti.run_id, -1 if map_index is None else int(map_index))


def budget_of(context: Context) -> str | None:
    """This try's retry budget label (``retry_budget``), or
    ``None`` when the task instance does not say its ``max_tries``."""
    max_tries = getattr(context["ti"], "max_tries", None)
    return retry_budget(max_tries) if isinstance(max_tries, int) else None


def first_try(context: Context) -> bool:
    """Whether no earlier try of this task instance can have made a job: its first try, run for the
    first time, in a run whose id was made once (``FIRST_TRY_RUN_TYPES``). Find-or-create then
    skips its look-up before the Create (``first_try``).

    ``attach_or_create`` runs in ``execute``, which Airflow never calls for a resumed deferral (the
    task runner calls ``resume_execution`` instead), and Airflow 3 runs a try's ``execute`` once:
    the scheduler adds one to ``try_number`` whenever it schedules a task instance again (a retry,
    a clear; not a resumed deferral), each try gets a new task instance id
    (``prepare_db_for_next_try``), and the execution API starts an id only from QUEUED or
    RESTARTING, refusing (409) one already running or ended. A run deleted and made again with the
    same run id starts at try 1 again, though: a manual run's id is its caller's choice, and
    ``dag.test()`` deletes the run of its logical date and makes it again on every call, so a
    manual (or operator-triggered) run always looks up first. Scheduled, backfill and asset runs
    get their ids from Airflow, once; should one be deleted and made again all the same, the List
    after the Create still adopts a live job of it (``find_or_create``)."""
    ti = context["ti"]
    run_type = getattr(context.get("dag_run"), "run_type", None)
    run_type = getattr(run_type, "value", run_type)
    return getattr(ti, "try_number", None) == 1 and run_type in FIRST_TRY_RUN_TYPES


class AttachHost(Protocol):
    """The operator as its ``JobAttacher`` sees it: its settings (read only, when used), its hook and log,
    and the job it would create."""

    @property
    def job_kind(self) -> JobKind: ...
    @property
    def hook(self) -> VertexJobsHook: ...
    @property
    def log(self) -> Any: ...
    @property
    def vertex_dist_conn_id(self) -> str: ...
    @property
    def if_exists(self) -> IfExists: ...
    @property
    def cancel_on_kill(self) -> bool: ...
    @property
    def wait_for_completion(self) -> bool: ...
    @property
    def deferrable(self) -> bool: ...

    def job_body(self) -> dict[str, Any]:
        """The v1 JSON body of the job to create."""

    def pools_table(self) -> str:
        """The pools as a table, logged at submit."""


class JobAttacher:
    """Finds its host's job for this try again or creates it, makes it the try's, and cancels it.

    ``job_name`` is the try's job once it has one; ``cancelled`` whether its cancel was requested.
    """

    def __init__(self, host: AttachHost) -> None:
        self.host = host
        self.job_name: str | None = None
        self.cancelled = False

    # -- find or create ------------------------------------------------------------------------
    def converge_labels(self, context: Context) -> dict[str, str]:
        """This try's task labels (``task_labels``): what its deferred wait converges on."""
        return task_labels(labels_of(context), self.host.job_body(), budget_of(context))

    def _converges_in_wait(self) -> bool:
        """Whether this try waits in the triggerer, whose trigger then converges concurrent tries' jobs
        (``converge_in_wait``): no List after the Create here."""
        return self.host.deferrable and self.host.wait_for_completion

    def _from_task_state(self, context: Context, body: dict[str, Any], budget: str | None) -> Job | None:
        """The job named in Airflow's task state, when it is this task's (same spec fingerprint, same
        retry budget) and still worth re-attaching to. A job the record names that an earlier budget's
        try left unfinished (the task was cleared since) is cancelled (``cancel_on_kill``): the record
        says it is this task's even when its spec was different."""
        store = context.get("task_state_store")
        if store is None:
            return None
        name = store.get(STATE_KEY)
        if not name:
            return None
        from google.api_core.exceptions import NotFound

        try:
            job = self.host.hook.get_job(str(name))
        except NotFound:
            self.host.log.warning("Job %s from the task state no longer exists", name)
            return None
        state = job_state(job)
        labels = job.get("labels") or {}
        if budget is not None and labels.get(BUDGET_LABEL) != budget:
            if state in ACTIVE_STATES and self.host.cancel_on_kill:
                self._cancel_earlier(str(name), state)
            return None
        if labels.get(SPEC_LABEL) != spec_fingerprint(body):
            self.host.log.warning(
                "Job %s from the task state was made from another version of the spec: not re-attaching",
                name,
            )
            return None
        if self.host.if_exists == "reattach" and state in REATTACHABLE_STATES:
            self.host.log.info("Re-attaching to %s (%s), named in the task state", name, short_state(state))
            return job
        self.host.log.info("Job %s from the task state is %s: not re-attaching", name, short_state(state))
        return None

    def _cancel_earlier(self, name: str, state: str) -> None:
        if state == "JOB_STATE_CANCELLING":
            return
        self.host.log.warning(
            "Cancelling %s (%s): made by a try before the task was cleared, and a cleared task runs again",
            name,
            short_state(state),
        )
        self.host.hook.cancel_job(name)

    def attach_or_create(self, context: Context) -> Job:
        """Re-attach to this task instance's job or create it (see the module doc).

        A job is this try's to re-attach to when it carries the run's labels, the fingerprint of this
        try's rendered spec and this try's retry budget (Airflow's ``max_tries``, which a retry keeps
        and a clear changes): a retry re-attaches, a cleared task -- a user asking for it to run again
        -- starts a job of its own, even when the earlier one succeeded. A job an earlier budget's try
        left unfinished is cancelled (``cancel_on_kill``; with ``cancel_on_kill=False`` it is left
        running). While the task waited in the triggerer, clearing it also makes Airflow cancel the
        trigger, whose ``on_kill`` cancels the job; this covers a task cleared before the triggerer
        started its trigger.
        """
        labels = labels_of(context)
        body = self.host.job_body()
        budget = budget_of(context)
        job = self._from_task_state(context, body, budget)
        if job is None:
            job, created = self.host.hook.find_or_create(
                self.host.job_kind,
                body,
                labels=labels,
                if_exists=self.host.if_exists,
                retry_budget=budget,
                cancel_earlier=self.host.cancel_on_kill,
                first_try=first_try(context),
                converge_in_wait=self._converges_in_wait(),
            )
            if created:
                self.host.log.info("Created %s\n%s", job["name"], self.host.pools_table())
            else:
                state = short_state(job_state(job))
                self.host.log.info("Re-attaching to %s (%s), found by its run labels", job["name"], state)
        self.adopt_job(context, job)
        return job

    def adopt_job(self, context: Context, job: Job) -> None:
        """Make ``job`` this try's: its name in the task state, its link in XCom and (when the task waits
        with ``cancel_on_kill``) its owner record, which the listener cancels if the task is marked."""
        store = context.get("task_state_store")
        if store is not None:
            store.set(STATE_KEY, job["name"])
        self.job_name = str(job["name"])
        console = self.host.hook.console_url(self.job_name)
        self.host.log.info("Job page: %s", console)
        ti = context["ti"]
        link: JobLink = {"name": self.job_name, "console_url": console}
        ti.xcom_push(key=LINK_XCOM_KEY, value=link)
        if (
            self.host.cancel_on_kill and self.host.wait_for_completion
        ):  # what the listener cancels if the task is marked by hand
            # with the task's own impersonation chain: the listener cancels with the task's credentials
            ti.xcom_push(key=OWNER_XCOM_KEY, value=self.owned_job(self.job_name).record())

    def owned_job(self, name: str) -> OwnedJob:
        """``name`` as this task's job: with its connection and its own impersonation chain, what the
        listener cancels it with when a user marks the task by hand."""
        return OwnedJob(name, self.host.vertex_dist_conn_id, self.host.hook.impersonation_chain_override)

    # -- execute -------------------------------------------------------------------------------
    def _state_now(self, context: Context) -> str | None:
        """This task instance's state in the metadata DB now (Task SDK ``get_task_states``), or
        ``None`` when it cannot be read."""
        ti = context["ti"]
        map_index = getattr(ti, "map_index", -1)
        map_index = -1 if map_index is None else int(map_index)
        try:
            states = ti.get_task_states(
                dag_id=ti.dag_id, task_ids=[ti.task_id], run_ids=[ti.run_id], map_index=map_index
            )
        except Exception as exc:
            self.host.log.warning("Could not read the task instance's state: %s", exc)
            return None
        key = ti.task_id if map_index < 0 else f"{ti.task_id}_{map_index}"
        state = states.get(ti.run_id, {}).get(key)
        return None if state is None else str(getattr(state, "value", state))

    def check_still_running(self, context: Context, job: Job) -> None:
        """Between the task's start and its owner record, a user's mark (or clear) has no job to
        cancel: the listener finds none. So once the record is pushed, look again: a task instance
        no longer running gets its new job cancelled here (a mark after this point is the
        listener's). Without this, the try would defer (and Airflow reject it) or wait, and leave the
        job running for nobody."""
        state = self._state_now(context)
        if state in (None, "running"):
            return
        name = str(job["name"])
        message = f"the task instance was set to {state} while it started job {name}"
        if job_state(job) in TERMINAL_STATES:
            raise AirflowException(f"{message}; the job had already ended ({short_state(job_state(job))})")
        from airflow_vertex_dist.jobs.states import cancel_outcome

        cancelled = self.cancel(name, reason=f"task set to {state}")
        raise AirflowException(message + cancel_outcome(True, cancelled))

    # -- kill ----------------------------------------------------------------------------------
    def _cancel_refused(self, name: str, exc: Exception) -> bool:
        """A cancel the service refused: the job is usually already being cancelled or ended -- a user
        who marked the task failed or successful had the listener cancel it first -- which is what
        was asked, not a failure. Otherwise a warning (the task's own outcome says the rest)."""
        try:
            state = job_state(self.host.hook.get_job(name))
        except Exception:
            state = ""
        if state in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"):
            self.host.log.info("Job %s is already %s (cancelled as asked)", name, short_state(state))
            return True
        if state in TERMINAL_STATES:
            self.host.log.info("Job %s had already ended (%s): nothing to cancel", name, short_state(state))
            return True
        self.host.log.warning("Cancel of %s was refused: %s", name, exc)
        return False

    def cancel(self, name: str, *, reason: str, wait_s: float = 30.0) -> bool:
        """Cancel the job (once, if ``cancel_on_kill``) and wait up to ``wait_s`` for it to end.

        ``True`` when the cancel was requested (now or by an earlier call).
        """
        if not self.host.cancel_on_kill:
            return False
        if self.cancelled:
            return True
        self.cancelled = True
        self.host.log.warning("Cancelling %s (%s)", name, reason)
        try:
            self.host.hook.cancel_job(name)
        except Exception as exc:
            return self._cancel_refused(name, exc)
        state = job_state(self.host.hook.wait_until_ended(name, timeout_s=wait_s))
        if state in TERMINAL_STATES:
            self.host.log.info("Job %s is %s", name, short_state(state))
        else:
            self.host.log.warning(
                "Job %s still %s %.0fs after the cancel request", name, short_state(state), wait_s
            )
        return True
