"""The capacity ladder of a training or tuning task (``capacity=``): one job at a time, rung after rung.

A try of a task with a ladder:

1. plans the ladder (``plan_ladder``): every rung applied to the rendered spec, validated, priced; logs
   the rungs with their price per hour before it creates anything;
2. finds the task's jobs on every rung and in every region (``ladder_jobs``: run labels, retry budget,
   ``airflow-rung``, the rung's spec fingerprint). A live or succeeded job of this retry budget is
   re-attached to, on whatever rung it runs: a task that died mid-ladder picks up where it was. The
   jobs that ended are read back into the ladder's history (why each rung was left: their
   classification), and the walk goes on from the rung after the last one left;
3. on each rung, creates the rung's job (find-or-create, labelled with its rung) in the rung's region
   and waits on it -- in the worker, or in the triggerer (``VertexRungTrigger``) when deferrable;
4. classifies the way it ended (``classify_job``, ``classify_create_error``). A capacity failure --
   stockout (a failed job, or one left QUEUED/PENDING past the rung's ``pending_limit``), quota,
   flex-start not granted, preemption -- leaves the rung as the rung says: ``next`` or ``retry`` after
   ``retry_backoff`` (at most ``retries`` times, then next). Before it leaves, the rung's job is
   cancelled if it has not ended, and waited on until it has: at most one of the task's jobs is live at
   any moment. User code, a bad image, a missing permission or an invalid request fail the task at once
   with ``AirflowFailException`` (no Airflow retry burns GPUs on it); anything else fails it as a job
   failure does without a ladder (Airflow's retries apply);
5. when every rung was left, fails with ``AirflowFailException`` and a table of the rungs tried: the job,
   why the rung was left and how long it took.

The XCom return value's ``rung`` names the rung the job ran on and lists the rungs left before it; the
task log says each step. Every rung's job writes under the same ``base_output_directory`` (the ladder
changes machines, strategy and region, never the output), so ``AIP_CHECKPOINT_DIR`` is the same on
every rung and every retry: a trainer that checkpoints there resumes. A rung on a persistent resource
has it ready first (``airflow_vertex_dist.operators.ladder_resource``), within the rung's ``pending_limit``.

``LadderWalk`` is the walk, an object the operator owns (``VertexJobOperator.ladder_walk``, made on first
use); what it needs of the operator is ``WaitHost`` (``airflow_vertex_dist.operators.wait_host``).
Finding the task's jobs again and ending them is ``airflow_vertex_dist.operators.ladder_resume``'s.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from airflow_vertex_dist._compat import AirflowException, AirflowFailException
from airflow_vertex_dist.operators.attach import budget_of, labels_of
from airflow_vertex_dist.operators.job_wait import job_verdict
from airflow_vertex_dist.operators.ladder_parts import (
    LadderState,
    ladder_table,
    pending_limit_s,
    price_text,
    prices_table,
    region_of,
    rung_job_line,
    rung_output_of,
    rung_seconds,
    strategy_of,
)
from airflow_vertex_dist.operators.ladder_resource import prepare_resource, resource_gone
from airflow_vertex_dist.operators.ladder_resume import (
    CANCEL_WAIT_S,
    cancel_task_jobs,
    end_job,
    survey,
)
from airflow_vertex_dist.operators.ladder_wait import (
    LADDER_XCOM_KEY,
    defer_rung,
    poll_rung,
    pulled_state,
    rung_ended,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_vertex_dist.hooks.rung_jobs import LadderJobs
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
    from airflow_vertex_dist.jobs.failures import Failure
    from airflow_vertex_dist.jobs.output_types import CostOutput, LadderStep, RungOutput
    from airflow_vertex_dist.jobs.types import Job
    from airflow_vertex_dist.operators.attach import JobAttacher
    from airflow_vertex_dist.operators.job_logs import JobLogs
    from airflow_vertex_dist.operators.wait_host import WaitHost
    from airflow_vertex_dist.specs.capacity import CapacityLadder, RungPlan

__all__ = ["CANCEL_WAIT_S", "LADDER_XCOM_KEY", "LadderState", "LadderWalk", "ladder_table", "prices_table"]


class _Move(NamedTuple):
    """Where the walk goes after a rung: the rung number to try (``len + 1``: none left)."""

    number: int


class LadderWalk:
    """The walk of a task's capacity ladder (see the module doc): ``execute`` walks it from the start of
    a try, ``complete`` goes on after a rung's trigger fired, ``cancel_task_jobs`` ends the task's jobs.
    It reads its host's settings through ``host`` (``WaitHost``), adopts each rung's job through
    ``attacher`` and streams replica logs through ``logs``, the operator's own parts.

    ``rung_plan`` is the rung the try is on (``None`` before it started) and ``steps`` the rungs left
    so far; ``rung_body``, ``rung_output`` and ``rung_cost`` say them for the job body, the XCom return
    value and OpenLineage. Nothing here touches the network before ``execute``.
    """

    def __init__(
        self, host: WaitHost, capacity: CapacityLadder, attacher: JobAttacher, logs: JobLogs
    ) -> None:
        self.host = host
        self.capacity = capacity
        self.attacher = attacher
        self.logs = logs
        self.rung_plan: RungPlan | None = None
        self.steps: list[LadderStep] | None = None
        self._region_hooks: dict[str, VertexJobsHook] = {}
        self._plans: list[RungPlan] | None = None

    # -- plans and hooks -----------------------------------------------------------------------
    @property
    def plans(self) -> list[RungPlan]:
        """The ladder applied to the validated (rendered) spec, priced in the connection's region."""
        if self._plans is None:
            from airflow_vertex_dist.specs.capacity import plan_ladder

            self._plans = plan_ladder(
                self.host.validated_spec, self.capacity, location=self.host.hook.location, rendered=True
            )
        return self._plans

    def forget_plans(self) -> None:
        """Plan the ladder again on next use (the spec was rendered since)."""
        self._plans = None

    def region_hook(self, region: str) -> VertexJobsHook:
        """A hook on ``region`` whose Create does not retry a capacity quota (the ladder moves on)."""
        hook = self._region_hooks.get(region)
        if hook is None:
            hook = self.host.hook_in(region)
            hook.retry_quota_at_create = False
            self._region_hooks[region] = hook
        return hook

    def _region(self, plan: RungPlan) -> str:
        return region_of(plan, self.host.hook.location)

    def rung_body(self) -> dict[str, Any]:
        """The request body of the rung the try is on (the first before it started)."""
        plan = self.rung_plan or self.plans[0]
        body: dict[str, Any] = plan.spec.to_api(location=self._region(plan))
        return body

    def rung_output(self) -> RungOutput | None:
        plan, rungs = self.rung_plan, len(self.capacity.rungs)
        return None if plan is None else rung_output_of(plan, rungs, self._region(plan), self.steps)

    def rung_cost(self, job: Mapping[str, Any]) -> CostOutput | None:
        from airflow_vertex_dist.jobs.outputs import job_cost

        plan = self.rung_plan
        return None if plan is None else job_cost(job, plan.usd_per_hour, plan.price_basis)

    def task_jobs(self, context: Context) -> LadderJobs:
        """The task's jobs on every rung and in every region (``ladder_jobs``)."""
        from airflow_vertex_dist.hooks.rung_jobs import ladder_jobs

        plans = self.plans
        regions = [self._region(p) for p in plans]
        bodies = [p.spec.to_api(location=self._region(p)) for p in plans]
        hooks = {region: self.region_hook(region) for region in regions}
        return ladder_jobs(hooks, self.host.job_kind, labels_of(context), bodies, regions, budget_of(context))

    def end_job(self, name: str, *, reason: str, wait_s: float = CANCEL_WAIT_S) -> None:
        """Cancel the job unless it ended and wait until it has (``ladder_resume.end_job``)."""
        end_job(self.host, name, reason=reason, wait_s=wait_s)

    def cancel_task_jobs(self, context: Context, reason: str) -> None:
        """Cancel this task's unfinished jobs on every rung (the deferral timed out)."""
        cancel_task_jobs(self.host, self.task_jobs(context), reason)

    # -- the walk ------------------------------------------------------------------------------
    def execute(self, context: Context) -> Any:
        plans = self.plans
        self.host.log.info(
            "Capacity ladder of %d rungs (prices from the machine catalog):\n%s",
            len(plans),
            prices_table(plans, self.host.hook.location),
        )
        state, start, live = survey(self.host, self.task_jobs(context), plans)
        if live is not None:
            number, job = live
            return self._walk(context, plans, state, number, job)
        return self._walk(context, plans, state, start, None)

    def complete(
        self,
        context: Context,
        event: dict[str, Any] | None = None,
        ladder: dict[str, Any] | None = None,
        rung: int | None = None,
    ) -> Any:
        """Resume after the rung's trigger fired: judge the job, then succeed, fail or go on. The walk's
        state comes from the deferral's kwargs or, where Airflow did not keep them, from the XCom the
        task pushed before deferring; the rung from the job's ``airflow-rung`` label."""
        from airflow_vertex_dist.hooks.labels import rung_of
        from airflow_vertex_dist.jobs.events import read_event
        from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES

        try:
            _verdict, compact = read_event(event)
        except ValueError as exc:
            raise AirflowException(str(exc)) from None
        plans = self.plans
        job: Any = compact
        if job is None:
            raise AirflowException(str((event or {}).get("message") or "the rung's job is gone"))
        if ladder is None:
            ladder = pulled_state(context)
        state = LadderState.from_json(ladder)
        number = rung or rung_of(job.get("labels")) or 1
        if str(job.get("state")) not in TERMINAL_STATES:  # read it again: the event is a snapshot
            job = self.host.hook.get_job(str(job["name"]))
        return self._walk(context, plans, state, number, job)

    def _walk(
        self,
        context: Context,
        plans: Sequence[RungPlan],
        state: LadderState,
        number: int,
        job: Any,
    ) -> Any:
        """From rung ``number`` (with its job when one is already known) until a job succeeds."""
        host = self.host
        while number <= len(plans):
            plan = state.plan_of(plans, number)
            self.rung_plan, self.steps = plan, state.steps
            if job is None:
                created = self._create(context, plan, state)
                if isinstance(created, _Move):
                    number, job = created.number, None
                    continue
                job, plan = created, state.plan_of(plans, number)  # its limit less the resource's wait
            self.attacher.adopt_job(context, job)
            host.log.info("%s", rung_job_line(plan, len(plans), job))  # "runs", or how it ended
            if not host.wait_for_completion:
                host.keep_final_job(job)
                return host.job_outputs(job)
            if host.cancel_on_kill:
                self.attacher.check_still_running(context, job)
            if host.deferrable and not rung_ended(host, job, plan):
                defer_rung(host, self.logs, context, plan, job, state)
            if not rung_ended(host, job, plan):
                job = poll_rung(host, self.logs, plan, job)
            outcome = self._judge(plans, state, number, job)
            if not isinstance(outcome, _Move):
                return outcome
            number, job = outcome.number, None
        raise AirflowFailException(
            f"Capacity ladder exhausted: every one of its {len(plans)} rungs was left, and no job ran to "
            f"the end.\n{ladder_table(state.steps)}"
        )

    def _create(self, context: Context, plan: RungPlan, state: LadderState) -> Job | _Move:
        from airflow_vertex_dist.hooks.find_or_create import find_or_create
        from airflow_vertex_dist.hooks.labels import rung_label
        from airflow_vertex_dist.jobs.failures import classify_create_error

        host = self.host
        region = self._region(plan)
        if plan.rung.persistent_resource is not None:  # ladder_resource: ready before the job
            failure, state.waited[plan.number] = prepare_resource(host, plan, region)
            if failure is not None:
                return self._leave(plan, state, None, failure, state.waited[plan.number], region)
        hook = self.region_hook(region)
        body = plan.spec.to_api(location=region)
        price = price_text(plan)
        host.log.info(
            "Rung %d (%s): creating its job in %s, %s USD/hour, %d GPUs",
            plan.number,
            plan.name,
            region,
            price,
            plan.gpus,
        )
        started = time.monotonic()
        try:
            job, created = find_or_create(
                hook,
                host.job_kind,
                body,
                labels={**labels_of(context), **rung_label(plan.number)},
                if_exists=host.if_exists,
                retry_budget=budget_of(context),
                cancel_earlier=host.cancel_on_kill,
            )
        except Exception as exc:
            failure = classify_create_error(exc)
            if failure.capacity:
                return self._leave(plan, state, None, failure, time.monotonic() - started, region)
            if failure.fail_fast:
                raise AirflowFailException(
                    f"{failure.kind} on rung {plan.number} ({plan.name}): {failure.reason}. Not trying other "
                    "rungs: this would fail on any of them"
                ) from exc
            raise
        if created:
            from airflow_vertex_dist.specs import pools_table

            host.log.info("Created %s\n%s", job["name"], pools_table(plan.spec, location=region))
        return job

    def _judge(
        self, plans: Sequence[RungPlan], state: LadderState, number: int, job: Mapping[str, Any]
    ) -> Any:
        """Succeed with the job's outputs, fail the task, or say which rung to go to (``_Move``)."""
        from airflow_vertex_dist.jobs.failures import classify_job

        host = self.host
        plan = state.plan_of(plans, number)
        self.rung_plan, self.steps = plan, state.steps
        host.keep_final_job(job)
        paused = str(job.get("state")) == "JOB_STATE_PAUSED"  # only judged once past its grace
        paused_for = host.paused_grace if paused else None
        verdict = job_verdict(
            job,
            partial_success=host.partial_success,
            paused_for_s=paused_for,
            paused_grace_s=host.paused_grace,
        )
        if verdict is not None and verdict[0]:
            host.log.info("%s on rung %d/%d (%s)", verdict[1], plan.number, len(plans), plan.name)
            return host.job_outputs(job)
        now_ns = host.hook.service_time().now_ns()  # the service's time: an emulator's scenario runs ahead
        limit, gone = pending_limit_s(plan), resource_gone(host, plan, self._region(plan), job)
        failure = classify_job(
            job, strategy=strategy_of(plan), pending_limit_s=limit, now_ns=now_ns, resource_gone=gone
        )
        if failure is not None and failure.capacity:
            return self._leave(plan, state, job, failure, rung_seconds(job, now_ns), self._region(plan))
        message = verdict[1] if verdict is not None else f"job {job.get('name')} did not succeed"
        details = self.logs.failure_details(job)
        if failure is not None and failure.fail_fast:
            raise AirflowFailException(
                f"{failure.kind} on rung {plan.number} ({plan.name}): {failure.reason}. Not trying other "
                f"rungs: this would fail on any of them. {message}{details}"
            )
        if str(job.get("state")) == "JOB_STATE_PAUSED":
            self.end_job(str(job["name"]), reason="PAUSED past its grace")
        raise AirflowException(message + details)

    def _leave(
        self,
        plan: RungPlan,
        state: LadderState,
        job: Mapping[str, Any] | None,
        failure: Failure,
        seconds: float,
        region: str,
    ) -> _Move:
        """Leave the rung for ``failure``: end its job first, record why, and pick the next rung."""
        log = self.host.log
        name = str(job["name"]) if job is not None else None
        if name is not None:
            self.end_job(name, reason=f"{failure.kind} on rung {plan.number}")
        step: LadderStep = {
            "rung": plan.number,
            "name": plan.name,
            "region": region,
            "job": name,
            "outcome": failure.kind,
            "reason": failure.reason,
            "seconds": round(seconds, 3),
        }
        state.steps.append(step)
        used = state.retries.get(plan.number, 0)
        if plan.rung.action(failure.kind) == "retry" and used < plan.rung.retries:
            state.retries[plan.number] = used + 1
            backoff = plan.rung.retry_backoff.total_seconds()
            log.warning(
                "Rung %d (%s): %s: %s. Retrying the rung in %gs (retry %d of %d)",
                plan.number,
                plan.name,
                failure.kind,
                failure.reason,
                backoff,
                used + 1,
                plan.rung.retries,
            )
            time.sleep(self.host.hook.service_time().real_s(backoff))  # service time: a scenario's pace
            return _Move(plan.number)
        log.warning(
            "Leaving rung %d (%s) after %.0fs: %s: %s",
            plan.number,
            plan.name,
            seconds,
            failure.kind,
            failure.reason,
        )
        return _Move(plan.number + 1)
