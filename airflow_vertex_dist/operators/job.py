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
4. waits on the job (``JobWait``, ``airflow_vertex_dist.operators.job_wait``, whose module doc tells the
   wait, its end on every terminal state, and the cancel on kill and timeout) or, with a capacity
   ladder, walks its rungs;
5. returns the job's outputs (XCom) or fails with the job's message.

Steps 2 and 3 and the cancellation are the operator's ``JobAttacher``'s (``attacher``,
``airflow_vertex_dist.operators.attach``); step 4 its ``JobWait``'s (``job_wait``) or, with a capacity
ladder (``capacity=``), its ``LadderWalk``'s (``ladder_walk``, ``airflow_vertex_dist.operators.ladder``:
one job at a time, rung after rung), both reading replica logs through its ``JobLogs`` (``job_logs``).
These parts are objects the operator owns, made on first use (building a task makes none), each told
what it needs of the operator by a protocol the operator meets (``AttachHost``, ``WaitHost``,
``LogsHost``). The spec, outputs and OpenLineage are here.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from pydantic import BaseModel

from airflow_vertex_dist._compat import TaskDeferralTimeout, conf
from airflow_vertex_dist.hooks.labels import SPEC_LABEL, spec_fingerprint
from airflow_vertex_dist.jobs.dicts import IfExists, check_if_exists, check_wait_settings, job_state
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES, JobKind
from airflow_vertex_dist.jobs.outputs import job_output
from airflow_vertex_dist.links import VertexJobLink
from airflow_vertex_dist.logs.worker_stream import StreamLogs, check_stream_logs
from airflow_vertex_dist.operators.attach import JobAttacher, labels_of
from airflow_vertex_dist.operators.base import VertexBaseOperator
from airflow_vertex_dist.operators.job_logs import JobLogs
from airflow_vertex_dist.operators.job_spec import (
    check_capacity,
    ladder_of,
    priced_pools_table,
    spec_before_rendering,
    spec_cost,
    spec_field,
)
from airflow_vertex_dist.operators.job_wait import JobWait, job_verdict
from airflow_vertex_dist.operators.parts import owned_part
from airflow_vertex_dist.operators.spec_field import (
    check_template_syntax,
    coerce_spec,
    render_spec,
    spec_to_field,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_vertex_dist.jobs.output_types import CostOutput, JobOutput, RungOutput, TaskLedger
    from airflow_vertex_dist.jobs.types import Job
    from airflow_vertex_dist.links import OwnedJob
    from airflow_vertex_dist.operators.ladder import LadderWalk
    from airflow_vertex_dist.specs.capacity import CapacityLadder, Rung
    from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

__all__ = ["VertexJobOperator", "job_verdict"]


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
        self.spec, self._spec = spec_field(spec, self.spec_model)
        if self._spec is None:  # Jinja to render: its syntax checked now, when the DAG file is parsed
            check_template_syntax(self.spec, self.get_template_env(), task_id=self.task_id)
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
        self._ledger: TaskLedger | None = None  # the try's cost ledger, as returned (for lineage)
        self.capacity = None if capacity is None else ladder_of(capacity)
        self.gpu_pool = gpu_pool
        parsed = self._spec
        if parsed is None and (self.capacity is not None or gpu_pool is not None):
            parsed = spec_before_rendering(spec, self.spec_model)
        if parsed is not None:
            check_capacity(self, parsed, gpu_pool, explicit_slots="pool_slots" in kwargs)
        elif gpu_pool is not None:
            if "pool_slots" not in kwargs:
                raise ValueError(
                    "gpu_pool: the spec's machines or replica counts hold Jinja, so its GPUs are only known "
                    "once rendered; give pool_slots too (the GPUs the job holds at once)"
                )
            self.pool = gpu_pool

    # -- the parts it owns, each made on first use (building a task makes none; ``owned_part``) ----
    @owned_part
    def attacher(self) -> JobAttacher:
        """Finds this try's job again or creates it, makes it the try's, cancels it (``operators.attach``)."""
        return JobAttacher(self)

    @owned_part
    def job_logs(self) -> JobLogs:
        """The replica logs of the try's job, read in the worker (``operators.job_logs``)."""
        return JobLogs(self)

    @owned_part
    def job_wait(self) -> JobWait:
        """The wait on the try's job when the task has no ladder (``operators.job_wait``)."""
        return JobWait(self, self.attacher, self.job_logs)

    @owned_part
    def ladder_walk(self) -> LadderWalk | None:
        """The walk of the capacity ladder (``operators.ladder``), ``None`` without ``capacity``."""
        if self.capacity is None:
            return None
        from airflow_vertex_dist.operators.ladder import LadderWalk

        return LadderWalk(self, self.capacity, self.attacher, self.job_logs)

    def attach_or_create(self, context: Context) -> Job:
        """Re-attach to this task instance's job or create it (``JobAttacher.attach_or_create``)."""
        return self.attacher.attach_or_create(context)

    def owned_job(self, name: str) -> OwnedJob:
        """``name`` as this task's job, as the listener cancels it (``JobAttacher.owned_job``)."""
        return self.attacher.owned_job(name)

    def make_trigger(
        self, job_name: str, job: Mapping[str, Any] | None = None, converge: dict[str, str] | None = None
    ) -> VertexJobTrigger:
        """The trigger a deferred wait hands to the triggerer (``JobWait.make_trigger``)."""
        return self.job_wait.make_trigger(job_name, job, converge)

    def keep_final_job(self, job: Mapping[str, Any] | None) -> None:
        """``job`` as it ended the try (OpenLineage's facets on complete read it)."""
        self._final_job = job

    def rung_output(self) -> RungOutput | None:
        """The rung the try's job ran on, with the rungs left before it (``None`` without a ladder)."""
        walk = self.ladder_walk
        return walk.rung_output() if walk is not None else None

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
        if self.ladder_walk is not None:  # the ladder is planned again from the rendered spec
            self.ladder_walk.forget_plans()

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
        """The pools as a table, with the price per hour, logged at submit."""
        return priced_pools_table(self.validated_spec, self.hook.location)

    def job_cost(self, job: Mapping[str, Any]) -> CostOutput:
        """The job's estimated cost (``job_cost``): the rung's price, or the spec's, times its hours."""
        cost = self.ladder_walk.rung_cost(job) if self.ladder_walk is not None else None
        if cost is not None:
            return cost
        return spec_cost(job, self.validated_spec, self.hook.location)

    def task_ledger(self, job: Mapping[str, Any]) -> TaskLedger:
        """The try's cost ledger, ending with ``job`` (``operators.ledger_output``), kept for lineage."""
        from airflow_vertex_dist.operators.ledger_output import task_ledger_of

        self._ledger = task_ledger_of(self, job)
        return self._ledger

    def job_outputs(self, job: Mapping[str, Any]) -> JobOutput:
        """The XCom return value (JSON)."""
        console = self.hook.console_url(str(job["name"]))
        ledger = self.task_ledger(job)
        return job_output(job, console, rung=self.rung_output(), cost=self.job_cost(job), ledger=ledger)

    def execute(self, context: Context) -> Any:
        if self.ladder_walk is not None:
            return self.ladder_walk.execute(context)
        return self.job_wait.run(context, self.attach_or_create(context))

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: success returns the outputs, an error raises its message
        (``JobWait.complete``)."""
        return self.job_wait.complete(context, event)

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
        return self.attacher.job_name is not None

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
            ledger=self._ledger if job is not None else None,
        )

    def get_openlineage_facets_on_start(self) -> Any:
        """Inputs, the model location and the job facet, before the job exists."""
        return self._lineage(None)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """As at start, with the job's resource name (and a study's best trial's model location)."""
        return self._lineage(self._final_job)

    def on_kill(self) -> None:
        name = self.attacher.job_name
        if name:
            self.attacher.cancel(name, reason="task killed")
