"""What the training and tuning operators share: find-or-create, the waits, kill and timeout, outputs.

A try of the task:

1. validates the (rendered) spec;
2. finds this task's job again, first in Airflow's task state (``task_state_store``, Airflow >= 3.3:
   the store ``ResumableJobMixin`` keeps the external id in) and then by the run labels
   (``airflow-dag``/``airflow-task``/``airflow-run``/``managed-by``). A job is this try's only when
   it also carries the fingerprint of the rendered spec (``airflow-spec``) and the try's retry
   budget (``airflow-budget``: Airflow's ``max_tries``, kept by a retry, changed by a clear). A retry
   re-attaches to a queued, running, paused or succeeded job and only creates one when there is none
   (``if_exists``); a job with another fingerprint is never adopted; a cleared task runs again: it
   starts a job of its own and cancels one an earlier try left unfinished (``cancel_on_kill``).
   Concurrent copies of one try converge on one job (the oldest): by a List after the Create, or,
   deferred, in the trigger (``VertexJobTrigger``'s ``converge``; its ``reattach`` event hands the
   task the oldest job, ``execute_complete`` cancels the task's own and defers on it);
3. logs the pools as a table at submit, pushes the job's name and console link to XCom, and (when it
   waits with ``cancel_on_kill``) the job's owner record, which the provider's listener
   (``airflow_vertex_dist.listeners``) cancels when a user marks the task failed or successful;
4. returns at once (``wait_for_completion=False``), defers to ``VertexJobTrigger``
   (``deferrable=True``) or polls with backoff, logging state changes, replicas up and trials done;
5. ends on every terminal state explicitly: SUCCEEDED succeeds; FAILED, CANCELLED, EXPIRED and PAUSED
   past its grace fail the task with the job's message; PARTIALLY_SUCCEEDED follows
   ``partial_success``. A job PAUSED past its grace is cancelled first (``cancel_on_kill``): it is
   billed for nothing, and once CANCELLED a retry creates a new job instead of re-attaching to it.

A killed task (``on_kill``) and an ``execution_timeout`` cancel the job (``cancel_on_kill``). While
deferred, the trigger does it: its ``on_kill`` (Airflow >= 3.3) when the task is killed (and the
listener, should the task be marked before the triggerer ran its trigger), and its
deadline (the ``execution_timeout``) just before Airflow's own deferral timeout; if Airflow's timeout
still ends the deferral first, the resumed task cancels the job before failing.

Steps 2 and 3 and the cancellation are the operator's ``JobAttacher``'s (``attacher``,
``airflow_vertex_dist.operators.attach``); the waits, outputs and OpenLineage are here. A task with a
capacity ladder (``capacity=``) walks its rungs instead, one job at a time: its ``LadderWalk``
(``ladder_walk``, ``airflow_vertex_dist.operators.ladder``). Both are objects the operator owns, made on
first use (building a task makes neither), each told what it needs of the operator by a protocol
(``AttachHost``, ``LadderHost``) the operator meets.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from pydantic import BaseModel

from airflow_vertex_dist._compat import AirflowException, AirflowTaskTimeout, TaskDeferralTimeout, conf
from airflow_vertex_dist.hooks.labels import SPEC_LABEL, spec_fingerprint
from airflow_vertex_dist.jobs.dicts import (
    IfExists,
    check_if_exists,
    check_wait_settings,
    job_state,
    parse_job_name,
    short_state,
)
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES, JobKind, ever_ran
from airflow_vertex_dist.jobs.outputs import job_output
from airflow_vertex_dist.links import VertexJobLink
from airflow_vertex_dist.logs.worker_stream import StreamLogs, check_stream_logs
from airflow_vertex_dist.operators.attach import JobAttacher, labels_of
from airflow_vertex_dist.operators.base import VertexBaseOperator
from airflow_vertex_dist.operators.spec_field import (
    check_keys,
    coerce_spec,
    has_jinja,
    render_spec,
    spec_to_field,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_vertex_dist.jobs.output_types import CostOutput, JobOutput, RungOutput
    from airflow_vertex_dist.jobs.types import Job
    from airflow_vertex_dist.links import OwnedJob
    from airflow_vertex_dist.operators.ladder import LadderWalk
    from airflow_vertex_dist.specs.capacity import CapacityLadder, Rung
    from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

__all__ = ["VertexJobOperator", "job_verdict"]


def job_verdict(
    job: Mapping[str, Any],
    *,
    partial_success: str = "fail",
    paused_for_s: float | None = None,
    paused_grace_s: float = 0.0,
) -> tuple[bool, str] | None:
    """``(succeeded, message)`` once the job ended for the task, ``None`` while it should wait.

    The same rules and messages as the trigger's
    (``job_event``), so a deferred and a
    non-deferred wait end a task alike.
    """
    from airflow_vertex_dist.jobs.states import job_event  # the wait rules: not at parse time

    event = job_event(
        job, partial_success=partial_success, paused_for_s=paused_for_s, paused_grace=paused_grace_s
    )
    if event is None:
        return None
    return event["status"] == "success", str(event["message"])


class VertexJobOperator(VertexBaseOperator):
    """Base of ``VertexTrainingOperator`` and ``VertexTuningOperator`` (not used directly).

    :param spec: the job spec: a spec model, a dict, or a template rendering to a JSON/YAML document.
        Templated: Jinja in its strings (display name, args, env, output directory...) is rendered, and
        the result validated again. A spec model's fields that hold Jinja (label values, display names,
        the output directory, the image, package URIs, the service account) are judged then.
    :param deferrable: wait in the triggerer instead of a worker slot. Defaults to Airflow's
        ``[operators] default_deferrable``.
    :param wait_for_completion: ``False`` submits (or re-attaches) and returns at once (the name the
        Google and Amazon providers' operators use). ``wait`` is its deprecated alias (one release,
        with a ``DeprecationWarning``).
    :param if_exists: when this task instance already has a live or succeeded job: ``reattach`` to it
        (default), ``fail``, or ``recreate`` (cancel it and create a new one).
    :param cancel_on_kill: cancel the job when the task is killed or times out.
    :param poll_interval: seconds between polls (the non-deferred wait starts faster and backs off
        to this).
    :param partial_success: ``fail`` (default) or ``succeed`` on PARTIALLY_SUCCEEDED.
    :param paused_grace: seconds a PAUSED job may stay paused before the task fails.
    :param lineage_inputs: the job's input data for OpenLineage: URIs (``gs://bucket/path``) or
        Airflow Assets, reported with the Assets in ``inlets`` (see
        ``airflow_vertex_dist.operators.lineage``). Templated.
    :param stream_logs: replica log lines in the task log while the job runs, deferred or not: ``True``
        (the primary's lines and every replica's warnings and errors), ``"all"``, a list of replica
        keys, or ``False``. A failed job's error quotes its failing replica's last lines either way.
    :param capacity: a capacity ladder (``CapacityLadder``, or a list of ``Rung``): the ordered ways to
        run the job when capacity is short; see docs/how-to/capacity.md. Planned, validated and priced
        when the task is built, and again from the rendered spec when it runs.
    :param gpu_pool: an Airflow pool that admits the task by its GPUs: the task's ``pool``, with
        ``pool_slots`` the GPUs the job holds at once (with a ladder, its largest rung's), so a pool of N
        slots never lets more than N GPUs run. An explicit ``pool_slots`` wins.
    """

    job_kind: ClassVar[JobKind]
    spec_model: ClassVar[type[BaseModel]]
    template_fields: Sequence[str] = (
        "spec",
        "vertex_dist_conn_id",
        "project_id",
        "location",
        "impersonation_chain",
        "lineage_inputs",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"spec": "json"}
    operator_extra_links = (VertexJobLink(),)
    ui_color = "#d2e3fc"

    def __init__(
        self,
        *,
        spec: Any,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        wait_for_completion: bool = True,
        wait: bool | None = None,
        if_exists: IfExists = "reattach",
        cancel_on_kill: bool = True,
        poll_interval: float = 10.0,
        partial_success: Literal["fail", "succeed"] = "fail",
        paused_grace: float = 3600.0,
        lineage_inputs: Sequence[Any] | None = None,
        stream_logs: StreamLogs = True,
        capacity: CapacityLadder | Sequence[Rung] | Mapping[str, Any] | None = None,
        gpu_pool: str | None = None,
        **kwargs: Any,
    ) -> None:
        if gpu_pool is not None and kwargs.get("pool") is not None:
            raise ValueError("gpu_pool: give pool or gpu_pool, not both (gpu_pool sets the task's pool)")
        super().__init__(**kwargs)
        self.stream_logs = check_stream_logs(stream_logs)
        check_if_exists(if_exists)
        check_wait_settings(partial_success, poll_interval, paused_grace)
        if spec is None:
            raise ValueError("spec: required")
        # Validate at DAG-parse time when nothing is left to render; otherwise after rendering. The
        # field holds JSON (a dict), so the UI shows the spec and the rendered spec as JSON.
        self._spec: BaseModel | None = None
        field = spec_to_field(spec, self.spec_model)  # a model is dumped once, for both uses
        if not has_jinja(field):
            self._spec = coerce_spec(spec, self.spec_model)
            if self._spec is not spec:  # a dict or a document: the field holds the validated spec
                field = spec_to_field(self._spec, self.spec_model)
        elif isinstance(field, Mapping):  # its keys now, its values once rendered
            check_keys(field, self.spec_model)
        self.spec = field
        self.deferrable = deferrable
        if wait is not None:
            warnings.warn(
                "VertexJobOperator(wait=...) is deprecated and will be removed in the next release: "
                "use wait_for_completion=...",
                DeprecationWarning,
                stacklevel=2,
            )
            wait_for_completion = wait
        self.wait_for_completion = bool(wait_for_completion)
        self.if_exists = if_exists
        self.cancel_on_kill = cancel_on_kill
        self.poll_interval = float(poll_interval)
        self.partial_success = partial_success
        self.paused_grace = float(paused_grace)
        self.lineage_inputs = list(lineage_inputs or [])
        self._final_job: Mapping[str, Any] | None = None  # the job as it ended the try (for lineage)
        self.capacity = None if capacity is None else _ladder(capacity)
        self.gpu_pool = gpu_pool
        parsed = self._spec
        if parsed is None and (self.capacity is not None or gpu_pool is not None):
            parsed = _spec_before_rendering(spec, self.spec_model)
        if parsed is not None:
            self._check_capacity(parsed, gpu_pool, explicit_slots="pool_slots" in kwargs)
        elif gpu_pool is not None:
            if "pool_slots" not in kwargs:
                raise ValueError(
                    "gpu_pool: the spec's machines or replica counts hold Jinja, so its GPUs are only known "
                    "once rendered; give pool_slots too (the GPUs the job holds at once)"
                )
            self.pool = gpu_pool

    def _check_capacity(self, spec: Any, gpu_pool: str | None, *, explicit_slots: bool) -> None:
        """At parse time: plan the ladder (every rung validated and priced), warn about a FLEX_START
        wait without limit in a scheduled DAG, and size ``gpu_pool``'s slots. ``spec`` is the validated
        spec, its Jinja (in the fields that may hold some) not rendered yet."""
        from airflow_vertex_dist.specs.capacity import LadderError, gpu_count, plan_ladder

        specs = [spec]
        if self.capacity is not None:
            try:
                plans = plan_ladder(spec, self.capacity, location=self.location)
            except LadderError as exc:
                raise ValueError(str(exc)) from None
            specs = [plan.spec for plan in plans]
        _warn_unbounded_flex_wait(self, specs)
        if gpu_pool is not None:
            self.pool = gpu_pool
            if not explicit_slots:
                self.pool_slots = max(1, *(gpu_count(s) for s in specs))

    # -- the parts it owns ---------------------------------------------------------------------
    @functools.cached_property
    def attacher(self) -> JobAttacher:
        """Finds this try's job again or creates it, makes it the try's, and cancels it (made on first
        use; ``airflow_vertex_dist.operators.attach``)."""
        return JobAttacher(self)

    @functools.cached_property
    def ladder_walk(self) -> LadderWalk | None:
        """The walk of the capacity ladder (made on first use; ``airflow_vertex_dist.operators.ladder``),
        ``None`` without ``capacity``."""
        if self.capacity is None:
            return None
        from airflow_vertex_dist.operators.ladder import LadderWalk

        return LadderWalk(self, self.capacity)

    @property
    def _job_name(self) -> str | None:
        """This try's job, once it has one (the attacher's)."""
        return self.attacher.job_name

    @_job_name.setter
    def _job_name(self, name: str | None) -> None:
        self.attacher.job_name = name

    def attach_or_create(self, context: Context) -> Job:
        """Re-attach to this task instance's job or create it (``JobAttacher.attach_or_create``)."""
        return self.attacher.attach_or_create(context)

    def adopt_job(self, context: Context, job: Job) -> None:
        """Make ``job`` this try's (``JobAttacher.adopt_job``)."""
        self.attacher.adopt_job(context, job)

    def check_still_running(self, context: Context, job: Job) -> None:
        """Fail, cancelling ``job``, when the task instance is no longer running
        (``JobAttacher.check_still_running``)."""
        self.attacher.check_still_running(context, job)

    def owned_job(self, name: str) -> OwnedJob:
        """``name`` as this task's job, as the listener cancels it (``JobAttacher.owned_job``)."""
        return self.attacher.owned_job(name)

    def converge_labels(self, context: Context) -> dict[str, str]:
        """This try's task labels: what its deferred wait converges on (``JobAttacher.converge_labels``)."""
        return self.attacher.converge_labels(context)

    def keep_final_job(self, job: Mapping[str, Any]) -> None:
        """``job`` as it ended the try (OpenLineage's facets on complete read it)."""
        self._final_job = job

    def rung_output(self) -> RungOutput | None:
        """The rung the try's job ran on, with the rungs left before it (``None`` without a ladder)."""
        walk = self.ladder_walk
        return walk.rung_output() if walk is not None else None

    def execute_ladder_complete(
        self,
        context: Context,
        event: dict[str, Any] | None = None,
        ladder: dict[str, Any] | None = None,
        rung: int | None = None,
    ) -> Any:
        """Resume the ladder's walk after a rung's trigger fired (``LadderWalk.complete``)."""
        walk = self.ladder_walk
        assert walk is not None, "execute_ladder_complete: the task has no capacity ladder"
        return walk.complete(context, event, ladder, rung)

    # -- spec ----------------------------------------------------------------------------------
    def _do_render_template_fields(
        self,
        parent: Any,
        template_fields: Iterable[str],
        context: Context,
        jinja_env: Any,
        seen_oids: set[int],
    ) -> None:
        """Render, then validate the rendered spec. Hooked here, not in ``render_template_fields``: a
        mapped task's instance is rendered by this method alone (the Task SDK's ``MappedOperator``
        calls it on the unmapped task), a plain task through ``render_template_fields``.

        The spec is rendered string by string (``render_spec``), so a template that fails names its
        path in the spec (``spec.labels.day``) and, in a run without a logical date, says so."""
        if parent is not self:  # a nested templated object
            super()._do_render_template_fields(parent, template_fields, context, jinja_env, seen_oids)
            return
        fields = list(template_fields)
        others = [name for name in fields if name != "spec"]
        super()._do_render_template_fields(parent, others, context, jinja_env, seen_oids)
        self._render_spec_field(context, jinja_env, seen_oids, render="spec" in fields)

    def _render_spec_field(
        self, context: Context, jinja_env: Any, seen_oids: set[int], *, render: bool
    ) -> None:
        if render and self.spec:
            self.spec = render_spec(
                self.spec,
                lambda item: self.render_template(item, context, jinja_env, seen_oids),
                task_id=self.task_id,
                has_logical_date=context.get("logical_date") is not None,
                skip=lambda item: id(item) in seen_oids,
            )
        self._spec = coerce_spec(self.spec, self.spec_model, when=" after rendering", rendered=True)
        self.spec = spec_to_field(self._spec, self.spec_model)
        walk = self.__dict__.get("ladder_walk")
        if walk is not None:  # the ladder is planned again from the rendered spec
            walk.forget_plans()

    def rendered_spec(self, context: Context | Mapping[str, Any], jinja_env: Any = None) -> Any:
        """Render the spec field alone with ``context`` and validate it, as a run does before creating
        the job; the validated spec model. The other templated fields are left as they are. Used by
        ``airflow-vertex-dist render path/to/dag_file.py``; ``jinja_env`` defaults to the DAG's."""
        env = jinja_env if jinja_env is not None else self.get_template_env()
        self._render_spec_field(cast("Context", context), env, set(), render=True)
        return self.validated_spec

    @property
    def validated_spec(self) -> Any:
        """The spec model (validated after rendering, or at parse time when it had no Jinja)."""
        if self._spec is None:
            self._spec = coerce_spec(self.spec, self.spec_model)
        return self._spec

    def job_body(self) -> dict[str, Any]:
        """The v1 JSON body of the job to create (with a ladder: the rung the try is on)."""
        walk = self.ladder_walk
        if walk is not None:
            return walk.rung_body()
        body: dict[str, Any] = self.validated_spec.to_api(location=self.hook.location)
        return body

    def pools_table(self) -> str:
        """The pools as a table, logged at submit."""
        from airflow_vertex_dist.specs import pools_table

        table: str = pools_table(self.validated_spec, location=self.hook.location)
        from airflow_vertex_dist.specs.capacity import spec_price_per_hour

        price, basis = spec_price_per_hour(self.validated_spec, self.hook.location)
        shown = f"{price:.2f} USD/hour ({basis})" if price is not None else f"unknown ({basis})"
        return f"{table}\nprice: {shown}, from the machine catalog"

    def job_cost(self, job: Mapping[str, Any]) -> CostOutput:
        """The job's estimated cost (``job_cost``): the rung's price, or the spec's, times its hours."""
        cost = self.ladder_walk.rung_cost(job) if self.ladder_walk is not None else None
        if cost is not None:
            return cost
        from airflow_vertex_dist.jobs.outputs import job_cost
        from airflow_vertex_dist.specs.capacity import spec_price_per_hour

        price, basis = spec_price_per_hour(self.validated_spec, self.hook.location)
        return job_cost(job, price, basis)

    def job_outputs(self, job: Mapping[str, Any]) -> JobOutput:
        """The XCom return value (JSON)."""
        console = self.hook.console_url(str(job["name"]))
        return job_output(job, console, rung=self.rung_output(), cost=self.job_cost(job))

    def execute(self, context: Context) -> Any:
        if self.ladder_walk is not None:
            return self.ladder_walk.execute(context)
        job = self.attach_or_create(context)
        if self.wait_for_completion and self.cancel_on_kill:
            self.check_still_running(context, job)
        if not self.wait_for_completion:
            self.log.info(
                "wait_for_completion=False: not waiting for %s (%s)", job["name"], short_state(job_state(job))
            )
            self._final_job = job
            return self.job_outputs(job)
        if self.deferrable:
            verdict = job_verdict(job, partial_success=self.partial_success)
            if verdict is not None:  # already ended (a re-attached job): nothing to wait for
                return self._finish(job, verdict)
            self._defer(context, job)
        return self._finish(*self._poll(job))

    def make_trigger(
        self, job_name: str, job: Mapping[str, Any] | None = None, converge: dict[str, str] | None = None
    ) -> VertexJobTrigger:
        """The trigger a deferred wait hands to the triggerer (JSON kwargs only); ``converge``: the task's
        labels, when the trigger converges concurrent tries' jobs (``converge_in_wait``)."""
        timeout = self.execution_timeout
        # Imported here: a DAG file that only builds the task never pays for the trigger machinery.
        from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

        return VertexJobTrigger(
            job_name=job_name,
            conn_id=self.vertex_dist_conn_id,
            project_id=self.project_id,
            location=self.location,
            poll_interval=self.poll_interval,
            cancel_on_kill=self.cancel_on_kill,
            partial_success=self.partial_success,
            paused_grace=self.paused_grace,
            timeout=timeout.total_seconds() if timeout is not None else None,
            impersonation_chain=self.hook.impersonation_chain_override,
            stream_logs=self.log_selection(job),
            converge=converge,
        )

    def log_selection(self, job: Mapping[str, Any] | None) -> Any:
        """Which replica log lines a trigger streams (``stream_logs``), or ``None``."""
        from airflow_vertex_dist.logs.worker_stream import selection_of

        return selection_of(self.stream_logs, job)

    def _defer(self, context: Context, job: Mapping[str, Any]) -> None:
        trigger = self.make_trigger(str(job["name"]), job, self.converge_labels(context))
        if trigger.stream_logs is not None:  # the cursor its stream reads at its first start
            from airflow_vertex_dist.logs.cursor import seed_cursor

            seed_cursor(context["ti"])
        self.log.info("Deferring: waiting for %s in the triggerer", job["name"])
        self.defer(
            trigger=trigger,
            method_name="execute_complete",
            timeout=self.execution_timeout,
        )

    def _poll(self, job: Mapping[str, Any]) -> tuple[Mapping[str, Any], tuple[bool, str]]:
        """Poll until the job ends: start at 1 s and back off (x1.5) to ``poll_interval``."""
        from airflow_vertex_dist.jobs.progress import ProgressLog
        from airflow_vertex_dist.jobs.states import PausedClock, cancel_outcome

        name = str(job["name"])
        streamer = self.log_streamer(job)
        progress = ProgressLog()
        delay = min(1.0, self.poll_interval)
        paused = PausedClock()
        try:
            while True:
                for line in progress.update(job):
                    self.log.info("%s", line)
                verdict = job_verdict(
                    job,
                    partial_success=self.partial_success,
                    paused_for_s=paused.paused_for(job),
                    paused_grace_s=self.paused_grace,
                )
                if streamer is not None and (verdict is None or ever_ran(job)):  # else no line to wait for
                    streamer.poll(force=verdict is not None)
                if verdict is not None:
                    if not verdict[0] and job_state(job) == "JOB_STATE_PAUSED":  # past its grace
                        cancelled = self.attacher.cancel(name, reason="PAUSED past its grace")
                        outcome = cancel_outcome(self.cancel_on_kill, cancelled, left="PAUSED")
                        verdict = (False, verdict[1] + outcome)
                    return job, verdict
                time.sleep(delay)
                delay = min(delay * 1.5, self.poll_interval)
                previous = job_state(job)
                job = self.hook.get_job(name)
                if job_state(job) != previous:
                    delay = min(1.0, self.poll_interval)
        except AirflowTaskTimeout:
            self.log.error("execution_timeout reached while waiting for %s", name)
            self.attacher.cancel(name, reason="execution_timeout")
            raise
        finally:
            if streamer is not None:
                streamer.hook.close()

    def log_streamer(self, job: Mapping[str, Any]) -> Any:
        """The worker-side replica log streamer of ``job``, or ``None`` (``stream_logs=False``)."""
        from airflow_vertex_dist.logs.worker_stream import LogStreamer

        selection = self.log_selection(job)
        if selection is None:
            return None
        name = parse_job_name(str(job["name"]))
        return LogStreamer(self._logs_hook(name.project), name.job_id, selection, self.log)

    def _logs_hook(self, project: str) -> Any:
        from airflow_vertex_dist.hooks.logs import VertexLogsHook

        return VertexLogsHook(
            self.vertex_dist_conn_id,
            project_id=project,
            impersonation_chain=self.hook.impersonation_chain_override or None,
        )

    def failure_details(self, job: Mapping[str, Any]) -> str:
        """The failing replica's last log lines, for a failed job's error."""
        from airflow_vertex_dist.logs.worker_stream import failure_details, shown_by

        hook = self._logs_hook(parse_job_name(str(job["name"])).project)
        try:
            shown = shown_by(self.log_selection(job))  # lines the stream wrote are not quoted again
            return failure_details(job, lambda job_id, replica, n: hook.tail(job_id, replica, lines=n), shown)
        finally:
            hook.close()

    def _finish(self, job: Mapping[str, Any], verdict: tuple[bool, str]) -> JobOutput:
        ok, message = verdict
        self._final_job = job
        if not ok:
            raise AirflowException(message + self.failure_details(job))
        self.log.info("%s", message)
        return self.job_outputs(job)

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: success returns the outputs, an error raises its message."""
        from airflow_vertex_dist.jobs.events import read_event, superseded_job
        from airflow_vertex_dist.jobs.progress import ProgressLog

        try:
            verdict, job = read_event(event)
        except ValueError as exc:
            raise AirflowException(str(exc)) from None
        if verdict.status == "reattach" and job is not None:
            assert isinstance(event, dict)  # read_event checked it
            return self._reattach(context, superseded_job(event), str(job["name"]), verdict.message)
        self._final_job = job
        if job is not None:
            self._job_name = str(job["name"])
        if not verdict.ok or job is None:
            details = self.failure_details(job) if job is not None else ""
            raise AirflowException(
                (verdict.message or f"job {self._job_name} did not succeed: {event!r}") + details
            )
        for line in ProgressLog().update(job):  # the final state and, for a study, its trials
            self.log.info("%s", line)
        self.log.info("%s", verdict.message or f"job {job['name']} succeeded")
        return self.job_outputs(job)

    def _reattach(self, context: Context, superseded: str, keep: str, message: str) -> Any:
        """The trigger found an older job of this task running the same spec (a ``reattach`` event):
        cancel the job it waited on, make the older one this try's, and wait on it."""
        self.log.warning("%s", message)
        try:
            job, sent = self.hook.cancel_unless_ended(superseded)
            self.log.info(
                "%s %s (%s)",
                "Cancelled" if sent else "Not cancelling",
                superseded,
                short_state(job_state(job)),
            )
        except Exception as exc:  # the trigger of the kept job may be cancelling it too
            self.log.warning("Cancel of %s failed: %s", superseded, exc)
        job = self.hook.get_job(keep)
        self.log.info("Re-attaching to %s (%s)", keep, short_state(job_state(job)))
        self.adopt_job(context, job)
        if self.cancel_on_kill:
            self.check_still_running(context, job)
        verdict = job_verdict(job, partial_success=self.partial_success)
        if verdict is not None:  # it ended meanwhile: nothing to wait for
            return self._finish(job, verdict)
        self._defer(context, job)

    def resume_execution(self, next_method: str, next_kwargs: dict[str, Any] | None, context: Context) -> Any:
        try:
            return super().resume_execution(next_method, next_kwargs, context)
        except TaskDeferralTimeout:
            # The trigger was killed by Airflow's deferral timeout (execution_timeout): cancel the job.
            if self.ladder_walk is not None:
                self.ladder_walk.cancel_task_jobs(context, reason="execution_timeout")
                raise
            labels = {**labels_of(context), SPEC_LABEL: spec_fingerprint(self.job_body())}
            job = self.hook.find_job(self.job_kind, labels)
            if job is not None and job_state(job) not in TERMINAL_STATES:
                self.attacher.cancel(str(job["name"]), reason="execution_timeout")
            raise

    @property
    def job_known(self) -> bool:
        """Whether this try got to its job (the job link reads no XCom when it did not)."""
        return self._job_name is not None

    # -- OpenLineage (called by the OpenLineage provider, when installed) -----------------------
    def _lineage(self, job: Mapping[str, Any] | None) -> Any:
        from airflow_vertex_dist.operators.lineage import operator_lineage  # the provider's types

        spec = self.validated_spec
        return operator_lineage(
            kind=self.job_kind,
            body=self.job_body(),
            reduction_server=getattr(getattr(spec, "trial_job", spec), "reduction_server", None) is not None,
            declared_inputs=self.lineage_inputs,
            inlets=self.inlets or [],
            job=job,
            rung=self.rung_output(),
            cost=self.job_cost(job) if job is not None and job.get("endTime") else None,
        )

    def get_openlineage_facets_on_start(self) -> Any:
        """Inputs, the model location and the job facet, before the job exists."""
        return self._lineage(None)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """As at start, with the job's resource name (and a study's best trial's model location)."""
        return self._lineage(self._final_job)

    def on_kill(self) -> None:
        if self._job_name:
            self.attacher.cancel(self._job_name, reason="task killed")


def _spec_before_rendering(spec: Any, model: type[BaseModel]) -> Any:
    """A spec that holds Jinja, validated as it is (the fields that may hold Jinja judged once rendered):
    its machines and counts are known when they hold none. ``None`` when it cannot be validated yet."""
    if isinstance(spec, model):
        return spec
    try:
        return coerce_spec(spec, model)
    except Exception:  # Jinja where a rule needs the rendered value: known once rendered
        return None


def _ladder(value: Any) -> CapacityLadder:
    """``capacity=`` as a ``CapacityLadder``: one, a list of rungs (no region allow-list), or a dict."""
    from airflow_vertex_dist.specs.capacity import CapacityLadder

    if isinstance(value, CapacityLadder):
        return value
    if isinstance(value, Mapping):
        return CapacityLadder.model_validate(dict(value))
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return CapacityLadder(rungs=tuple(value))
    raise TypeError(f"capacity: expected a CapacityLadder or a list of Rung (got {type(value).__name__})")


def _warn_unbounded_flex_wait(task: Any, specs: Iterable[Any]) -> None:
    """A FLEX_START job with ``max_wait_duration`` 0 waits for capacity for ever ("If set to 0, the job
    will wait indefinitely": v1 ``Scheduling``); in a DAG on a schedule, runs then pile up behind it."""
    try:
        timetable = task.dag.timetable
    except Exception:  # not in a DAG (yet)
        return
    if not getattr(timetable, "can_be_scheduled", False):
        return
    for spec in specs:
        job = getattr(spec, "trial_job", spec)
        scheduling = job.scheduling
        if (
            scheduling is not None
            and scheduling.strategy == "FLEX_START"
            and scheduling.max_wait_duration is not None
            and not scheduling.max_wait_duration
        ):
            warnings.warn(
                f"task {task.task_id}: scheduling.max_wait_duration is 0 with strategy FLEX_START, so the "
                "job waits for capacity without limit while the DAG runs on a schedule; give a limit (the "
                "service's default is 24 hours) or a rung pending_limit",
                UserWarning,
                stacklevel=3,
            )
            return
