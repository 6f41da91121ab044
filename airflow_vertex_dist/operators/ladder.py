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
every rung and every retry: a trainer that checkpoints there resumes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from airflow_vertex_dist._compat import AirflowException, AirflowFailException
from airflow_vertex_dist.jobs.kinds import ever_ran
from airflow_vertex_dist.operators.ladder_parts import (
    LadderState,
    ladder_table,
    pending_limit_s,
    price_text,
    prices_table,
    region_of,
    rung_seconds,
    strategy_of,
    verdict_of,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
    from airflow_vertex_dist.jobs.failures import Failure
    from airflow_vertex_dist.jobs.output_types import CostOutput, LadderStep, RungOutput
    from airflow_vertex_dist.jobs.types import Job
    from airflow_vertex_dist.specs.capacity import CapacityLadder, RungPlan

__all__ = ["CANCEL_WAIT_S", "LADDER_XCOM_KEY", "LadderState", "ladder_table", "prices_table"]

#: The XCom key of the walk's state while the task is deferred (``LadderState.to_json``): the rungs left
#: so far, a refused Create included, which no job records. XComs are kept across a deferral.
LADDER_XCOM_KEY = "vertex_ladder"
#: How long a rung's cancelled job may take to end before the task gives up rather than start another.
CANCEL_WAIT_S = 600.0


class _Move(NamedTuple):
    """Where the walk goes after a rung: the rung number to try (``len + 1``: none left)."""

    number: int


class CapacityLadderMixin:
    """The ladder walk of ``VertexJobOperator`` (see the module doc); the operator sets ``capacity``."""

    if TYPE_CHECKING:
        from airflow_vertex_dist.jobs.dicts import IfExists
        from airflow_vertex_dist.jobs.kinds import JobKind

        capacity: CapacityLadder | None
        job_kind: ClassVar[JobKind]
        hook: VertexJobsHook
        hook_class: ClassVar[type[VertexJobsHook]]
        log: Any
        vertex_dist_conn_id: str
        project_id: str | None
        impersonation_chain: Any
        if_exists: IfExists
        cancel_on_kill: bool
        wait_for_completion: bool
        deferrable: bool
        poll_interval: float
        partial_success: str
        paused_grace: float
        execution_timeout: Any
        validated_spec: Any
        _job_name: str | None
        _final_job: Mapping[str, Any] | None

        def _labels(self, context: Context) -> dict[str, str]: ...
        def _budget(self, context: Context) -> str | None: ...
        def adopt_job(self, context: Context, job: Job) -> None: ...
        def _check_still_running(self, context: Context, job: Job) -> None: ...
        def _failure_details(self, job: Mapping[str, Any]) -> str: ...
        def _log_streamer(self, job: Mapping[str, Any]) -> Any: ...
        def _log_selection(self, job: Mapping[str, Any] | None) -> Any: ...
        def job_outputs(self, job: Mapping[str, Any]) -> Any: ...
        def defer(self, **kwargs: Any) -> Any: ...

    _rung_plan: RungPlan | None = None
    _rung_steps: list[LadderStep] | None = None
    _region_hooks: dict[str, VertexJobsHook] | None = None
    _plans_cache: list[RungPlan] | None = None

    # -- plans and hooks -----------------------------------------------------------------------
    @property
    def ladder_plans(self) -> list[RungPlan]:
        """The ladder applied to the validated (rendered) spec, priced in the connection's region."""
        if self._plans_cache is None:
            from airflow_vertex_dist.specs.capacity import plan_ladder

            assert self.capacity is not None
            self._plans_cache = plan_ladder(
                self.validated_spec, self.capacity, location=self.hook.location, rendered=True
            )
        return self._plans_cache

    def region_hook(self, region: str) -> VertexJobsHook:
        """A hook on ``region`` whose Create does not retry a capacity quota (the ladder moves on)."""
        if self._region_hooks is None:
            self._region_hooks = {}
        hook = self._region_hooks.get(region)
        if hook is None:
            hook = self.hook_class(
                self.vertex_dist_conn_id,
                project_id=self.project_id,
                location=region,
                impersonation_chain=self.impersonation_chain,
            )
            hook.retry_quota_at_create = False
            self._region_hooks[region] = hook
        return hook

    def _regions(self, plans: Sequence[RungPlan]) -> list[str]:
        return [region_of(p, self.hook.location) for p in plans]

    def _bodies(self, plans: Sequence[RungPlan]) -> list[dict[str, Any]]:
        return [p.spec.to_api(location=region_of(p, self.hook.location)) for p in plans]

    def rung_body(self) -> dict[str, Any] | None:
        """The request body of the rung the try is on (the first before it started), or ``None``."""
        if self.capacity is None:
            return None
        plan = self._rung_plan or self.ladder_plans[0]
        body: dict[str, Any] = plan.spec.to_api(location=region_of(plan, self.hook.location))
        return body

    def rung_output(self) -> RungOutput | None:
        plan = self._rung_plan
        if plan is None or self.capacity is None:
            return None
        return {
            "number": plan.number,
            "of": len(self.capacity.rungs),
            "name": plan.name,
            "region": region_of(plan, self.hook.location),
            "strategy": strategy_of(plan),
            "usd_per_hour": plan.usd_per_hour,
            "left": list(self._rung_steps or []),
        }

    def rung_cost(self, job: Mapping[str, Any]) -> CostOutput | None:
        from airflow_vertex_dist.jobs.outputs import job_cost

        plan = self._rung_plan
        if plan is None:
            return None
        return job_cost(job, plan.usd_per_hour, plan.price_basis)

    # -- the walk ------------------------------------------------------------------------------
    def execute_ladder(self, context: Context) -> Any:
        plans = self.ladder_plans
        self.log.info(
            "Capacity ladder of %d rungs (prices from the machine catalog):\n%s",
            len(plans),
            prices_table(plans, self.hook.location),
        )
        state, start, live = self._survey(context, plans)
        if live is not None:
            number, job = live
            return self._walk(context, plans, state, number, job)
        return self._walk(context, plans, state, start, None)

    def execute_ladder_complete(
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
        plans = self.ladder_plans
        job: Any = compact
        if job is None:
            raise AirflowException(str((event or {}).get("message") or "the rung's job is gone"))
        if ladder is None:
            ladder = self._pulled_state(context)
        state = LadderState.from_json(ladder)
        number = rung or rung_of(job.get("labels")) or 1
        if str(job.get("state")) not in TERMINAL_STATES:  # read it again: the event is a snapshot
            job = self.hook.get_job(str(job["name"]))
        return self._walk(context, plans, state, number, job)

    def _pulled_state(self, context: Context) -> dict[str, Any] | None:
        ti = context["ti"]
        map_index = getattr(ti, "map_index", -1)
        kwargs: dict[str, Any] = {"key": LADDER_XCOM_KEY, "task_ids": ti.task_id}
        if isinstance(map_index, int) and map_index >= 0:
            kwargs["map_indexes"] = map_index
        value = ti.xcom_pull(**kwargs)
        return value if isinstance(value, dict) else None

    def _walk(
        self,
        context: Context,
        plans: Sequence[RungPlan],
        state: LadderState,
        number: int,
        job: Any,
    ) -> Any:
        """From rung ``number`` (with its job when one is already known) until a job succeeds."""
        while number <= len(plans):
            plan = plans[number - 1]
            self._rung_plan, self._rung_steps = plan, state.steps
            if job is None:
                created = self._create(context, plan, state)
                if isinstance(created, _Move):
                    number, job = created.number, None
                    continue
                job = created
            self.adopt_job(context, job)
            self.log.info("Rung %d/%d (%s) runs %s", plan.number, len(plans), plan.name, job["name"])
            if not self.wait_for_completion:
                self._final_job = job
                return self.job_outputs(job)
            if self.cancel_on_kill:
                self._check_still_running(context, job)
            if self.deferrable and not self._ended(job, plan):
                self._defer_rung(context, plan, job, state)
            if not self._ended(job, plan):
                job = self._poll_rung(plan, job)
            outcome = self._judge(context, plans, state, number, job)
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

        region = region_of(plan, self.hook.location)
        hook = self.region_hook(region)
        body = plan.spec.to_api(location=region)
        price = price_text(plan)
        self.log.info(
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
                self.job_kind,
                body,
                labels={**self._labels(context), **rung_label(plan.number)},
                if_exists=self.if_exists,
                retry_budget=self._budget(context),
                cancel_earlier=self.cancel_on_kill,
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

            self.log.info("Created %s\n%s", job["name"], pools_table(plan.spec, location=region))
        return job

    def _ended(self, job: Mapping[str, Any], plan: RungPlan, paused_for_s: float | None = None) -> bool:
        from airflow_vertex_dist.jobs.failures import classify_job

        verdict = verdict_of(
            job, self.partial_success, paused_for_s=paused_for_s, paused_grace_s=self.paused_grace
        )
        if verdict is not None:
            return True
        return (
            classify_job(job, strategy=strategy_of(plan), pending_limit_s=pending_limit_s(plan)) is not None
        )

    def _defer_rung(
        self, context: Context, plan: RungPlan, job: Mapping[str, Any], state: LadderState
    ) -> None:
        from airflow_vertex_dist.triggers.rung import VertexRungTrigger

        context["ti"].xcom_push(key=LADDER_XCOM_KEY, value=state.to_json())
        timeout = self.execution_timeout
        trigger = VertexRungTrigger(
            job_name=str(job["name"]),
            conn_id=self.vertex_dist_conn_id,
            project_id=self.project_id,
            location=region_of(plan, self.hook.location),
            poll_interval=self.poll_interval,
            cancel_on_kill=self.cancel_on_kill,
            partial_success=self.partial_success,
            paused_grace=self.paused_grace,
            timeout=timeout.total_seconds() if timeout is not None else None,
            impersonation_chain=self.hook.impersonation_chain_override,
            stream_logs=self._log_selection(job),
            pending_limit=pending_limit_s(plan),
            strategy=strategy_of(plan),
            rung=plan.number,
            job_created=str(job["createTime"]) if job.get("createTime") else None,
        )
        self.log.info("Deferring: waiting for %s (rung %d) in the triggerer", job["name"], plan.number)
        self.defer(
            trigger=trigger,
            method_name="execute_ladder_complete",
            kwargs={"ladder": state.to_json(), "rung": plan.number},
            timeout=timeout,
        )

    def _poll_rung(self, plan: RungPlan, job: Job) -> Job:
        """Poll until the job ended for the task, or waited past the rung's ``pending_limit``."""
        from airflow_vertex_dist._compat import AirflowTaskTimeout
        from airflow_vertex_dist.jobs.progress import ProgressLog
        from airflow_vertex_dist.jobs.states import PausedClock

        name = str(job["name"])
        streamer = self._log_streamer(job)
        progress = ProgressLog()
        paused = PausedClock()
        delay = min(1.0, self.poll_interval)
        try:
            while True:
                for line in progress.update(job):
                    self.log.info("%s", line)
                ended = self._ended(job, plan, paused.paused_for(job))
                if streamer is not None and (not ended or ever_ran(job)):  # else no line to wait for
                    streamer.poll(force=ended)
                if ended:
                    return job
                time.sleep(delay)
                delay = min(delay * 1.5, self.poll_interval)
                job = self.hook.get_job(name)
        except AirflowTaskTimeout:
            self.log.error("execution_timeout reached while waiting for %s", name)
            try:
                self._end_job(name, reason="execution_timeout", wait_s=30.0)
            except AirflowException as exc:
                self.log.warning("%s", exc)
            raise
        finally:
            if streamer is not None:
                streamer.hook.close()

    def _judge(
        self,
        context: Context,
        plans: Sequence[RungPlan],
        state: LadderState,
        number: int,
        job: Mapping[str, Any],
    ) -> Any:
        """Succeed with the job's outputs, fail the task, or say which rung to go to (``_Move``)."""
        from airflow_vertex_dist.jobs.failures import classify_job

        plan = plans[number - 1]
        self._rung_plan, self._rung_steps = plan, state.steps
        self._final_job = job
        paused = str(job.get("state")) == "JOB_STATE_PAUSED"  # only judged once past its grace
        paused_for = self.paused_grace if paused else None
        verdict = verdict_of(
            job, self.partial_success, paused_for_s=paused_for, paused_grace_s=self.paused_grace
        )
        if verdict is not None and verdict[0]:
            self.log.info("%s on rung %d/%d (%s)", verdict[1], plan.number, len(plans), plan.name)
            return self.job_outputs(job)
        failure = classify_job(job, strategy=strategy_of(plan), pending_limit_s=pending_limit_s(plan))
        region = region_of(plan, self.hook.location)
        if failure is not None and failure.capacity:
            return self._leave(plan, state, job, failure, rung_seconds(job), region)
        message = verdict[1] if verdict is not None else f"job {job.get('name')} did not succeed"
        details = self._failure_details(job)
        if failure is not None and failure.fail_fast:
            raise AirflowFailException(
                f"{failure.kind} on rung {plan.number} ({plan.name}): {failure.reason}. Not trying other "
                f"rungs: this would fail on any of them. {message}{details}"
            )
        if str(job.get("state")) == "JOB_STATE_PAUSED":
            self._end_job(str(job["name"]), reason="PAUSED past its grace")
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
        name = str(job["name"]) if job is not None else None
        if name is not None:
            self._end_job(name, reason=f"{failure.kind} on rung {plan.number}")
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
            self.log.warning(
                "Rung %d (%s): %s: %s. Retrying the rung in %gs (retry %d of %d)",
                plan.number,
                plan.name,
                failure.kind,
                failure.reason,
                backoff,
                used + 1,
                plan.rung.retries,
            )
            time.sleep(backoff)
            return _Move(plan.number)
        self.log.warning(
            "Leaving rung %d (%s) after %.0fs: %s: %s",
            plan.number,
            plan.name,
            seconds,
            failure.kind,
            failure.reason,
        )
        return _Move(plan.number + 1)

    def _end_job(self, name: str, *, reason: str, wait_s: float = CANCEL_WAIT_S) -> None:
        """Cancel the job unless it ended, and wait until it has: the next rung's job is only created
        once this one is no longer live. A job still not ended after ``wait_s`` fails the task."""
        from airflow_vertex_dist.jobs.dicts import job_state, short_state
        from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES

        job = self.hook.get_job(name)
        if job_state(job) in TERMINAL_STATES:
            return
        if job_state(job) != "JOB_STATE_CANCELLING":
            self.log.warning("Cancelling %s (%s)", name, reason)
            try:
                self.hook.cancel_job(name)
            except Exception as exc:  # already being cancelled, or ended meanwhile: the wait below tells
                self.log.info("Cancel of %s answered %s", name, exc)
        job = self.hook.wait_until_ended(name, timeout_s=wait_s)
        state = job_state(job)
        if state not in TERMINAL_STATES:
            raise AirflowException(
                f"job {name} is still {short_state(state)} {wait_s:g}s after it was cancelled: not moving to "
                "another rung while it may run (a task has at most one live job)"
            )
        self.log.info("Job %s is %s", name, short_state(state))

    # -- finding the task's jobs again ---------------------------------------------------------
    def _survey(
        self, context: Context, plans: Sequence[RungPlan]
    ) -> tuple[LadderState, int, tuple[int, Job] | None]:
        """This task's jobs on every rung: ``(history, rung to start at, (rung, live job) or None)``."""
        from airflow_vertex_dist.hooks.find_or_create import (
            LIVE_STATES,
            NO_CANCEL_STATES,
            JobAlreadyExistsError,
        )
        from airflow_vertex_dist.hooks.rung_jobs import ladder_jobs
        from airflow_vertex_dist.jobs.dicts import job_state, short_state
        from airflow_vertex_dist.jobs.failures import classify_job

        regions = self._regions(plans)
        hooks = {region: self.region_hook(region) for region in regions}
        found = ladder_jobs(
            hooks, self.job_kind, self._labels(context), self._bodies(plans), regions, self._budget(context)
        )
        for rung, job in found.earlier:
            if self.cancel_on_kill and job_state(job) not in NO_CANCEL_STATES:
                self.log.warning(
                    "Cancelling %s (rung %d, %s): made by a try before the task was cleared, and a cleared "
                    "task runs again",
                    job["name"],
                    rung,
                    short_state(job_state(job)),
                )
                self.hook.cancel_job(str(job["name"]))
        state = LadderState()
        live = [entry for entry in found.mine if job_state(entry.job) in LIVE_STATES]
        if live:
            keep, *others = live
            for entry in others:  # concurrent copies of one try: keep the oldest, as find-or-create does
                self._end_job(str(entry.job["name"]), reason="a concurrent copy of this try's job")
            if self.if_exists == "fail":
                raise JobAlreadyExistsError(keep.job)
            if self.if_exists == "reattach":
                self.log.info(
                    "Re-attaching to %s (%s) on rung %d, found by its labels",
                    keep.job["name"],
                    short_state(job_state(keep.job)),
                    keep.rung,
                )
                return self._history(found.mine, plans, until=keep.job), keep.rung, (keep.rung, keep.job)
            self._end_job(str(keep.job["name"]), reason="if_exists='recreate'")
            return state, 1, None
        succeeded = [e for e in found.mine if job_state(e.job) == "JOB_STATE_SUCCEEDED"]
        if succeeded and self.if_exists == "reattach":
            last = succeeded[-1]
            self.log.info("Re-attaching to %s (SUCCEEDED) on rung %d", last.job["name"], last.rung)
            return self._history(found.mine, plans, until=last.job), last.rung, (last.rung, last.job)
        if succeeded and self.if_exists == "fail":
            raise JobAlreadyExistsError(succeeded[-1].job)
        if self.if_exists == "recreate":
            return state, 1, None
        state = self._history(found.mine, plans)
        start = 1
        if found.mine:
            last = found.mine[-1]
            plan = plans[last.rung - 1]
            failure = classify_job(
                last.job, strategy=strategy_of(plan), pending_limit_s=pending_limit_s(plan)
            )
            if failure is not None and failure.fail_fast:
                raise AirflowFailException(
                    f"{failure.kind} on rung {plan.number} ({plan.name}), job {last.job['name']} of an "
                    f"earlier try: {failure.reason}. Not trying other rungs: this would fail on any of them"
                )
            start = last.rung
            if failure is not None and failure.capacity:
                used = sum(1 for s in state.steps if s["rung"] == last.rung)
                if plan.rung.action(failure.kind) != "retry" or used > plan.rung.retries:
                    start = last.rung + 1
            self.log.info(
                "Resuming the capacity ladder at rung %d; the rungs left so far:\n%s",
                start,
                ladder_table(state.steps),
            )
        return state, start, None

    def _history(self, mine: Sequence[Any], plans: Sequence[RungPlan], until: Any = None) -> LadderState:
        """The rungs this budget's ended jobs left, read back from the jobs (oldest first)."""
        from airflow_vertex_dist.jobs.failures import classify_job

        state = LadderState()
        for rung, job in mine:
            if until is not None and job is until:
                break
            plan = plans[rung - 1]
            failure = classify_job(job, strategy=strategy_of(plan), pending_limit_s=pending_limit_s(plan))
            if failure is None or not failure.capacity:
                continue
            state.steps.append(
                {
                    "rung": rung,
                    "name": plan.name,
                    "region": region_of(plan, self.hook.location),
                    "job": str(job["name"]),
                    "outcome": failure.kind,
                    "reason": failure.reason,
                    "seconds": round(rung_seconds(job), 3),
                }
            )
            if plan.rung.action(failure.kind) == "retry":
                state.retries[rung] = state.retries.get(rung, 0) + 1
        return state

    def cancel_ladder_jobs(self, context: Context, reason: str) -> None:
        """Cancel this task's unfinished jobs on every rung (the deferral timed out)."""
        from airflow_vertex_dist.hooks.find_or_create import NO_CANCEL_STATES
        from airflow_vertex_dist.hooks.rung_jobs import ladder_jobs
        from airflow_vertex_dist.jobs.dicts import job_state

        plans = self.ladder_plans
        regions = self._regions(plans)
        hooks = {region: self.region_hook(region) for region in regions}
        found = ladder_jobs(
            hooks, self.job_kind, self._labels(context), self._bodies(plans), regions, self._budget(context)
        )
        for _rung, job in found.mine:
            if job_state(job) not in NO_CANCEL_STATES and self.cancel_on_kill:
                self.log.warning("Cancelling %s (%s)", job["name"], reason)
                self.hook.cancel_job(str(job["name"]))
