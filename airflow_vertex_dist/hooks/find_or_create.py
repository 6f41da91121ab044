"""Find-or-create: this task's job is adopted when it exists and created only when it does not.

The JobService has no request id, so a retried or concurrent try would otherwise make a second billed
job. ``find_or_create`` looks the task's jobs up by label (the run's labels plus the spec's
fingerprint and the try's retry budget), re-attaches, fails or recreates (``if_exists``), and after
its Create converges concurrent callers on one live job. A task instance's first try skips the
look-up before its Create (``first_try``: it has nothing to find). The List after the Create is
skipped only when the caller's wait converges instead (``converge_in_wait``: a deferred wait, whose
trigger reads the same jobs from the shared poller's List, ``sibling_verdict``). It runs on any hook
with the calls of ``JobsApi`` (``find_or_create``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

from airflow_vertex_dist.common.rfc3339 import rfc3339_key
from airflow_vertex_dist.hooks.labels import (
    BUDGET_LABEL,
    SPEC_LABEL,
    merge_labels,
    spec_fingerprint,
    task_labels,
)
from airflow_vertex_dist.hooks.spec_match import spec_difference
from airflow_vertex_dist.jobs.dicts import (
    REATTACHABLE_STATES,
    IfExists,
    check_if_exists,
    job_labels,
    job_state,
    short_state,
)
from airflow_vertex_dist.jobs.kinds import CUSTOM_JOBS, JOB_KINDS, TERMINAL_STATES, JobKind
from airflow_vertex_dist.jobs.types import Job

__all__ = [
    "LIVE_STATES",
    "NO_CANCEL_STATES",
    "JobAlreadyExistsError",
    "JobsApi",
    "adoptable",
    "check_kind",
    "find_or_create",
    "newest_first",
    "SiblingVerdict",
    "sibling_verdict",
]


class _Log(Protocol):
    def info(self, msg: str, /, *args: Any, **kwargs: Any) -> Any: ...

    def warning(self, msg: str, /, *args: Any, **kwargs: Any) -> Any: ...


class JobsApi(Protocol):
    """The hook calls find-or-create makes
    (``VertexJobsHook`` has them)."""

    @property
    def log(self) -> _Log: ...

    def find_jobs(self, kind: str, labels: dict[str, str]) -> list[Job]: ...

    def create_job(self, kind: str, body: dict[str, Any]) -> Job: ...

    def cancel_job(self, name: str) -> None: ...


LIVE_STATES = REATTACHABLE_STATES - {"JOB_STATE_SUCCEEDED"}

#: ``cancel_unless_ended`` sends nothing to a job in these: it ended, or a cancel is already under way.
NO_CANCEL_STATES = TERMINAL_STATES | {"JOB_STATE_CANCELLING"}


class JobAlreadyExistsError(RuntimeError):
    """``find_or_create(if_exists="fail")`` found a live or succeeded job for these labels."""

    def __init__(self, job: Job) -> None:
        self.job = job
        super().__init__(
            f"if_exists='fail': job {job.get('name')} for these labels already exists "
            f"(state {job_state(job)})"
        )


def check_kind(kind: str) -> JobKind:
    if kind not in JOB_KINDS:
        raise ValueError(f"kind: must be one of {', '.join(JOB_KINDS)} (got {kind!r})")
    return CUSTOM_JOBS if kind == CUSTOM_JOBS else "hyperparameterTuningJobs"


def newest_first(jobs: Iterable[Job]) -> list[Job]:
    return sorted(jobs, key=lambda job: rfc3339_key(str(job.get("createTime", ""))), reverse=True)


def _age(job: Job) -> tuple[Any, str]:
    """Sort key, oldest first: ``createTime``, then the name (so every caller picks the same job)."""
    return rfc3339_key(str(job.get("createTime", ""))), str(job.get("name", ""))


def adoptable(jobs: list[Job]) -> Job:
    """The job to re-attach to: the oldest unfinished one (the one concurrent tries keep), else the
    newest succeeded one."""
    live = [job for job in jobs if job_state(job) in LIVE_STATES]
    return sorted(live, key=_age)[0] if live else newest_first(jobs)[0]


def find_or_create(
    hook: JobsApi,
    kind: str,
    body: dict[str, Any],
    *,
    labels: dict[str, str],
    if_exists: IfExists = "reattach",
    retry_budget: str | None = None,
    cancel_earlier: bool = True,
    first_try: bool = False,
    converge_in_wait: bool = False,
) -> tuple[Job, bool]:
    """Return ``(job, created)``: this task's live or succeeded job, or a new one.

    ``labels`` (normally ``run_labels``) are merged into the
    body and identify the run; the body also gets the ``airflow-spec`` label, its fingerprint
    (``spec_fingerprint``). Only a job carrying the run's
    labels *and* this fingerprint is this task's: one with another fingerprint (a job of another
    deployment, a copy made in the console, or one made from another version of the spec) is
    logged and never adopted, cancelled or counted.

    ``retry_budget`` (a label value, see ``retry_budget``)
    names the retry budget of the calling try and is written on the job (``airflow-budget``).
    A job of this task made in another budget was made by a try before the task was cleared: it
    is never adopted (a clear means "run it again") and, with ``cancel_earlier``, cancelled when
    unfinished. Without ``retry_budget`` every job of this task counts as this budget's.

    With a job of this budget in a re-attachable state (queued, pending, running, paused, updating
    or succeeded): ``reattach`` returns it (the oldest unfinished one, else the newest succeeded
    one), ``fail`` raises ``JobAlreadyExistsError``, ``recreate`` cancels the unfinished ones
    and creates a new job. Jobs that failed, were cancelled, expired or partially succeeded never
    block a new one.

    The service has no request id, so calls running at the same time (two copies of one task
    instance) may each create a job. After its Create a call therefore lists this budget's
    unfinished jobs again and, when there is more than one, keeps the oldest (by ``createTime``,
    then name: the same choice in every caller) and cancels the others; every caller returns the
    kept job (``created`` is then true only for the caller that made it).

    ``first_try`` is the caller's word that no earlier try of this task instance ran, so none can have
    made a job: Airflow's first try of a task instance, in its ``execute`` (not resumed from a
    deferral), in a scheduled, backfill or asset run (``airflow_vertex_dist.operators.attach.first_try``
    says why nothing else can be). With ``if_exists="reattach"`` the look-up before the Create is then skipped
    (one List call less; ``fail`` and ``recreate`` keep it), and the one after it lists every job of
    the run, not only this budget's: it converges as above, and does what the look-up would have done
    with the rest (another fingerprint's jobs logged and left alone, an earlier budget's unfinished
    ones cancelled with ``cancel_earlier``). A live job of this budget that was there before -- only a
    deleted DAG run made again with the same run id can have left one -- is kept over the new one,
    which is cancelled; one that succeeded is not re-attached to. A try that may have run before (a
    retry, a cleared task, a resumed deferral) must not pass it.

    ``converge_in_wait`` is the caller's word that it will wait for the job it gets in a trigger that
    converges (``VertexJobTrigger`` with ``converge``, fed by the shared poller's List): the List after
    the Create is then skipped -- a first try makes one call, a Create -- and the trigger does what it
    would have done (``sibling_verdict``), with no call of its own. A wait in the worker, or no wait,
    must not pass it.
    """
    job_kind = check_kind(kind)
    check_if_exists(if_exists)
    mine_labels = task_labels(labels, body, retry_budget)
    merged = merge_labels(body.get("labels"), mine_labels, field="body.labels")
    if first_try and if_exists == "reattach":
        created = hook.create_job(job_kind, {**body, "labels": merged})
        if converge_in_wait:
            return created, True
        mine, earlier = _task_jobs(hook, job_kind, labels, body, retry_budget, created=str(created["name"]))
        skip = _earlier_budgets(hook, earlier, cancel_earlier)
        live = [job for job in mine if job_state(job) in LIVE_STATES and job["name"] not in skip]
        return _keep_oldest(hook, live, created)
    mine, earlier = _task_jobs(hook, job_kind, labels, body, retry_budget)
    skip = _earlier_budgets(hook, earlier, cancel_earlier)
    if mine:
        if if_exists == "reattach":
            job = adoptable(mine)
            hook.log.info("Re-attaching to %s (%s)", job["name"], short_state(job_state(job)))
            return job, False
        if if_exists == "fail":
            raise JobAlreadyExistsError(adoptable(mine))
        skip |= _cancel_active(hook, mine, "if_exists='recreate'")
    created = hook.create_job(job_kind, {**body, "labels": merged})
    if converge_in_wait:
        return created, True
    return _converge(hook, job_kind, mine_labels, body, created, skip)


def _runs_body(hook: JobsApi, kind: JobKind, job: Job, body: dict[str, Any]) -> bool:
    """Whether ``job`` runs exactly ``body`` (``spec_match``); logs why not."""
    differs = spec_difference(kind, dict(job), body)
    if differs is not None:
        hook.log.warning(
            "Not adopting %s (%s): it carries this task's labels and spec fingerprint, but its spec "
            "differs from this task's at %s: a job planted with copied labels, or one changed after it "
            "was made",
            job["name"],
            short_state(job_state(job)),
            differs,
        )
    return differs is None


def _earlier_budgets(hook: JobsApi, earlier: list[Job], cancel_earlier: bool) -> set[str]:
    """Cancel (``cancel_earlier``) or leave the unfinished jobs of earlier budgets; the names of those
    sent a Cancel."""
    if cancel_earlier:
        return _cancel_active(hook, earlier, "made by a try before the task was cleared")
    for job in earlier:
        hook.log.info(
            "Leaving %s (%s), made by a try before the task was cleared, alone (cancel_earlier=False)",
            job["name"],
            short_state(job_state(job)),
        )
    return set()


def _task_jobs(
    hook: JobsApi,
    kind: JobKind,
    labels: dict[str, str],
    body: dict[str, Any],
    budget: str | None,
    *,
    created: str | None = None,
) -> tuple[list[Job], list[Job]]:
    """The run's re-attachable jobs that run ``body``: ``(of this budget, of earlier ones)``.
    Jobs with another fingerprint, or whose spec is not ``body``'s, are logged, not returned; the job
    named ``created`` (this call's own, made from ``body``) is not compared."""
    fingerprint = spec_fingerprint(body)
    mine: list[Job] = []
    earlier: list[Job] = []
    for job in hook.find_jobs(kind, labels):
        if job_state(job) not in REATTACHABLE_STATES:
            continue
        found_labels = job_labels(job)
        theirs = found_labels.get(SPEC_LABEL)
        if theirs != fingerprint:
            hook.log.warning(
                "Not adopting %s (%s): it carries this run's labels but its spec fingerprint "
                "(%s=%s) is not this task's (%s): a job of another deployment, a copy, or one made "
                "from another version of the spec",
                job["name"],
                short_state(job_state(job)),
                SPEC_LABEL,
                theirs,
                fingerprint,
            )
        elif job["name"] != created and not _runs_body(hook, kind, job, body):
            continue
        elif budget is None or found_labels.get(BUDGET_LABEL) == budget:
            mine.append(job)
        else:
            earlier.append(job)
    return mine, earlier


def _converge(
    hook: JobsApi,
    kind: JobKind,
    mine: dict[str, str],
    body: dict[str, Any],
    created: Job,
    skip: set[str],
) -> tuple[Job, bool]:
    """After a Create: keep the oldest of the task's unfinished jobs and cancel the others. A job
    with the task's labels whose spec is not ``body``'s is not the task's: neither kept nor
    cancelled."""
    live = [
        job
        for job in hook.find_jobs(kind, mine)
        if job_state(job) in LIVE_STATES
        and job["name"] not in skip
        and (job["name"] == created["name"] or _runs_body(hook, kind, job, body))
    ]
    return _keep_oldest(hook, live, created)


def _keep_oldest(hook: JobsApi, live: list[Job], created: Job) -> tuple[Job, bool]:
    """Of the task's unfinished jobs ``live`` (after ``created`` was made): keep the oldest and cancel
    the others; the kept job, and whether it is ``created``. ``created`` counts even when the List
    did not show it yet."""
    if job_state(created) in LIVE_STATES and all(job["name"] != created["name"] for job in live):
        live = [*live, created]
    if len(live) <= 1:
        return created, True
    keep, *others = sorted(live, key=_age)
    hook.log.warning(
        "%d unfinished jobs of this task were created at the same time (concurrent tries); keeping "
        "the oldest, %s, and cancelling %s",
        len(live),
        keep["name"],
        ", ".join(str(job["name"]) for job in others),
    )
    for job in others:
        try:
            hook.cancel_job(str(job["name"]))
        except Exception as exc:  # another caller may be cancelling it too
            hook.log.warning("Cancel of %s failed: %s", job["name"], exc)
    if keep["name"] == created["name"]:
        return created, True
    hook.log.info("Re-attaching to %s (%s)", keep["name"], short_state(job_state(keep)))
    return keep, False


def _cancel_active(hook: JobsApi, jobs: list[Job], reason: str) -> set[str]:
    """Cancel the unfinished ones of ``jobs``; the names of those sent a Cancel."""
    sent = set()
    for job in jobs:  # the rule of cancel_unless_ended: not an ended job, nor one being cancelled
        if job_state(job) not in NO_CANCEL_STATES:
            hook.log.warning("Cancelling %s (%s): %s", job["name"], short_state(job_state(job)), reason)
            hook.cancel_job(job["name"])
            sent.add(str(job["name"]))
    return sent


class SiblingVerdict(NamedTuple):
    """What a converging wait does about the jobs listed beside its own (``sibling_verdict``)."""

    #: the job the task keeps: its own, unless an older live job of its budget runs the same spec
    keep: Job
    #: the other live jobs of its budget (never its own): made by concurrent tries, to be cancelled
    duplicates: list[Job]
    #: live jobs of an earlier retry budget (a try before the task was cleared)
    earlier: list[Job]


def _budget_number(value: object) -> int | None:
    """The ``max_tries`` a budget label value (``retry_budget``) records, or ``None``."""
    text = str(value or "")
    if text.startswith("m-") and text[2:].isdigit():
        return -int(text[2:])
    if text.startswith("m") and text[1:].isdigit():
        return int(text[1:])
    return None


def sibling_verdict(
    kind: str, own: Job, labels: dict[str, str], listed: Iterable[Job], log: _Log
) -> SiblingVerdict:
    """The convergence of a wait whose job was made without the List after its Create
    (``converge_in_wait``), from jobs listed with it (the shared poller's List).

    ``own`` is the waited-on job as listed, ``labels`` the task's (``task_labels``). Of the listed live
    jobs that carry the task's labels, fingerprint included, and run ``own``'s spec (a job with copied
    labels and another spec is logged and left alone, as ``find_or_create`` does), those of the task's
    budget converge with ``own`` as after a Create: the oldest (by ``createTime``, then name: the same
    choice in every caller) is kept, the others are duplicates. ``own`` counts whatever its state:
    when it no longer runs (another try's trigger cancelled it) an older live job is still kept, and
    when ``own`` is the oldest it is kept even so (the wait then ends on its state). Jobs of a budget
    whose ``max_tries`` is lower than the task's are ``earlier`` -- a stale trigger of an earlier try
    never counts a later budget's job as earlier."""
    job_kind = check_kind(kind)
    budget = labels.get(BUDGET_LABEL)
    ours = _budget_number(budget)
    same: list[Job] = [own]
    earlier: list[Job] = []
    for job in listed:
        found_labels = job_labels(job)
        if (
            job.get("name") == own.get("name")
            or job_state(job) not in LIVE_STATES
            or any(found_labels.get(k) != v for k, v in labels.items() if k != BUDGET_LABEL)
        ):
            continue
        differs = spec_difference(job_kind, dict(job), dict(own))
        if differs is not None:
            log.warning(
                "Not converging with %s (%s): it carries this task's labels and spec fingerprint, but "
                "its spec differs from %s's at %s: a job planted with copied labels, or one changed after "
                "it was made",
                job["name"],
                short_state(job_state(job)),
                own.get("name"),
                differs,
            )
        elif budget is None or found_labels.get(BUDGET_LABEL) == budget:
            same.append(job)
        else:
            theirs = _budget_number(found_labels.get(BUDGET_LABEL))
            if ours is not None and theirs is not None and theirs < ours:
                earlier.append(job)
    keep = sorted(same, key=_age)[0]
    duplicates = [job for job in same if job is not keep and job is not own]
    return SiblingVerdict(keep, duplicates, earlier)
