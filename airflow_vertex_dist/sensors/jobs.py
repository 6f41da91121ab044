"""Sensors on a Vertex AI job, its replicas and its trials; deferrable like the operators.

- ``VertexJobSensor``: the job reaches a target state (default SUCCEEDED); fails fast on a
  failure state.
- ``VertexReplicaSensor``: named replicas (``workerpool0-0``) or whole pools (``workerpool1-*``)
  are up, read from ``webAccessUris``; a clear error when the job lacks ``enableWebAccess``; fails
  when the job ends first.
- ``VertexTrialSensor``: at least ``min_succeeded`` trials succeeded, or the best final metric
  crossed ``metric_threshold`` in the study's direction; fails when the job ends first.

A verdict of failure is final (the job cannot go back), so it raises ``AirflowFailException``: no
retry. The XCom return value is the job as JSON (as the operators return it; the trial sensor adds
the best trial and the trials).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue

from airflow_vertex_dist._compat import AirflowException, AirflowFailException, conf
from airflow_vertex_dist.common.replicas import check_replica_names
from airflow_vertex_dist.hooks import DEFAULT_CONN_ID
from airflow_vertex_dist.jobs.dicts import job_state, parse_job_name
from airflow_vertex_dist.jobs.events import Verdict, read_event
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES, ever_ran
from airflow_vertex_dist.jobs.outputs import job_output, tuning_output
from airflow_vertex_dist.jobs.progress import ProgressLog
from airflow_vertex_dist.jobs.replicas import replica_condition
from airflow_vertex_dist.jobs.states import job_condition, normalize_state
from airflow_vertex_dist.jobs.trials import check_trial_condition, trial_condition
from airflow_vertex_dist.links import LINK_XCOM_KEY, VertexJobLink
from airflow_vertex_dist.logs.worker_stream import StreamLogs, check_stream_logs
from airflow_vertex_dist.operators.base import VertexHookMixin
from airflow_vertex_dist.operators.spec_field import has_jinja

if TYPE_CHECKING:
    from airflow.sdk import Context
    from airflow.triggers.base import BaseTrigger

    from airflow_vertex_dist.jobs.output_types import JobLink, JobOutput, TuningOutput

__all__ = ["VertexJobSensor", "VertexReplicaSensor", "VertexTrialSensor"]


class _VertexJobWaitSensor(VertexHookMixin, BaseSensorOperator):
    """Polls (or defers on) one job until ``condition`` gives a verdict.

    Every sensor takes ``stream_logs`` as the training operators do: the watched job's replica lines
    in the task log while it waits (``True``: the primary's lines and every replica's warnings and
    errors; ``"all"``; a list of replica keys; ``False``), and ``impersonation_chain`` (a service
    account to impersonate, or a chain ending at the target; replaces the connection's), which both
    the job reads and the log reads use, poking or deferred. A list in ``stream_logs`` may name whole
    pools (``workerpool1-*``). A job that had already ended when the sensor first looked at it has its
    lines in the log of the task that waited for it: with the default ``stream_logs=True`` the sensor
    does not write them again (``"all"`` or a list of replicas does).
    """

    template_fields: Sequence[str] = (
        "job_name",
        "vertex_dist_conn_id",
        "project_id",
        "location",
        "impersonation_chain",
    )
    operator_extra_links = (VertexJobLink(),)
    ui_color = "#e6f4ea"

    def __init__(
        self,
        *,
        job_name: str,
        vertex_dist_conn_id: str = DEFAULT_CONN_ID,
        project_id: str | None = None,
        location: str | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        stream_logs: StreamLogs = True,
        impersonation_chain: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.impersonation_chain = impersonation_chain
        self.stream_logs = check_stream_logs(stream_logs)
        self._streamer: Any = None
        if not job_name:
            raise ValueError("job_name: required")
        if not has_jinja(job_name):
            parse_job_name(job_name)
        self.job_name = job_name
        self.vertex_dist_conn_id = vertex_dist_conn_id
        self.project_id = project_id
        self.location = location
        self.deferrable = deferrable
        self._progress = ProgressLog("found")
        self._link_pushed = False
        self._job: Mapping[str, Any] | None = None  # the job as last seen (pools for stream_logs)
        self._history_only = False  # the job had ended when first seen: its lines are not streamed

    # -- what subclasses say -------------------------------------------------------------------
    def condition(self, job: Mapping[str, Any]) -> Verdict | None:
        raise NotImplementedError

    def make_trigger(self, name: str) -> BaseTrigger:
        raise NotImplementedError

    def outputs(self, job: Mapping[str, Any]) -> JobOutput:
        return job_output(job, self.hook.console_url(str(job["name"])))

    # -- the wait ------------------------------------------------------------------------------
    @property
    def _name(self) -> str:
        return str(parse_job_name(str(self.job_name).strip()))

    def _push_link(self, context: Context) -> None:
        if not self._link_pushed:
            name = self._name
            value: JobLink = {"name": name, "console_url": self.hook.console_url(name)}
            context["ti"].xcom_push(key=LINK_XCOM_KEY, value=value)
            self._link_pushed = True

    def _settle(self, job: Mapping[str, Any], verdict: Verdict) -> JobOutput:
        if self._streamer is not None:
            self._streamer.hook.close()
            self._streamer = None
        if not verdict.ok:
            raise AirflowFailException(verdict.message)
        self.log.info("%s", verdict.message)
        return self.outputs(job)

    def poke(self, context: Context) -> PokeReturnValue | bool:
        self._push_link(context)
        job = self.hook.get_job(self._name)
        if self._job is None and job_state(job) in TERMINAL_STATES and self.stream_logs is True:
            self._history_only = True
            self.log.info(
                "Job %s had already ended: its replica lines are not written again here (they are in "
                "the log of the task that waited for it, and in Cloud Logging; stream_logs='all' or a "
                "list of replicas writes them)",
                self._name,
            )
        self._job = job
        for line in self._progress.update(job):
            self.log.info("%s", line)
        verdict = self.condition(job)
        if verdict is None or ever_ran(job):  # a job that never ran has no replica line to wait for
            self._stream_lines(force=verdict is not None)
        if verdict is None:
            return False
        return PokeReturnValue(is_done=True, xcom_value=self._settle(job, verdict))

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        result = self.poke(context)
        if isinstance(result, PokeReturnValue) and result.is_done:
            return result.xcom_value
        trigger = self.make_trigger(self._name)
        if getattr(trigger, "stream_logs", None) is not None:  # the cursor its stream reads first
            from airflow_vertex_dist.logs.cursor import seed_cursor
            from airflow_vertex_dist.logs.poller import LogCursor

            cursor = LogCursor(getattr(trigger, "log_timestamp", ""), getattr(trigger, "log_insert_id", ""))
            seed_cursor(context["ti"], cursor)
        self.log.info("Deferring: waiting on %s in the triggerer", self._name)
        self.defer(
            trigger=trigger,
            method_name="execute_complete",
            timeout=timedelta(seconds=float(self.timeout)) if self.timeout is not None else None,
        )

    def _stream_lines(self, *, force: bool) -> None:
        """Poke mode: write the job's new replica lines (a rescheduled poke starts a new stream)."""
        from airflow_vertex_dist.logs.worker_stream import LogStreamer, selection_of

        if self._history_only:
            return
        selection = selection_of(self.stream_logs, self._job)
        if selection is None:
            return
        if self._streamer is None:
            name = parse_job_name(self._name)
            self._streamer = LogStreamer(self._logs_hook(name.project), name.job_id, selection, self.log)
        self._streamer.poll(force=force)

    def _logs_hook(self, project: str) -> Any:
        """The Cloud Logging reader of the poke loop: this task's connection and impersonation chain."""
        from airflow_vertex_dist.hooks.logs import VertexLogsHook

        return VertexLogsHook(
            self.vertex_dist_conn_id,
            project_id=project,
            impersonation_chain=self.hook.impersonation_chain_override or None,
        )

    def _trigger_kwargs(self, name: str) -> dict[str, Any]:
        from airflow_vertex_dist.logs.masking import secret_spans
        from airflow_vertex_dist.logs.worker_stream import selection_of

        cursor: dict[str, str] = {}
        if self._streamer is not None:  # the first poke wrote lines: the trigger goes on after them
            cursor = {
                "log_timestamp": self._streamer.cursor.timestamp,
                "log_insert_id": self._streamer.cursor.insert_id,
            }
            self._streamer.hook.close()
            self._streamer = None
        return {
            **cursor,
            "job_name": name,
            "conn_id": self.vertex_dist_conn_id,
            "project_id": self.project_id,
            "location": self.location,
            "poll_interval": float(self.poke_interval),
            "stream_logs": selection_of(self.stream_logs, self._job),
            "impersonation_chain": self.hook.impersonation_chain_override,
            "mask_spans": secret_spans(self._job) if self._job is not None else [],
        }

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: success returns the outputs, an error fails the task."""
        try:
            verdict, job = read_event(event)
        except ValueError as exc:
            raise AirflowException(str(exc)) from None
        if not verdict.ok or job is None:
            raise AirflowFailException(verdict.message or f"waiting on {self.job_name} failed")
        self.log.info("%s", verdict.message)
        return self.outputs(job)


class VertexJobSensor(_VertexJobWaitSensor):
    """Wait for a job to reach one of ``target_states``.

    :param job_name: the job's resource name (templated).
    :param target_states: states that end the wait successfully (``SUCCEEDED`` or
        ``JOB_STATE_SUCCEEDED``; default SUCCEEDED).
    :param failure_states: states that fail the task at once; default: every terminal state that is
        not a target (FAILED, CANCELLED, EXPIRED, PARTIALLY_SUCCEEDED...).
    """

    def __init__(
        self,
        *,
        target_states: Sequence[str] = ("SUCCEEDED",),
        failure_states: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(target_states, str):
            target_states = [target_states]
        if not target_states:
            raise ValueError("target_states: name at least one state")
        self.target_states = [normalize_state(s) for s in target_states]
        if isinstance(failure_states, str):
            failure_states = [failure_states]
        self.failure_states = (
            None
            if failure_states is None
            else [normalize_state(s, field="failure_states") for s in failure_states]
        )
        both = set(self.target_states) & set(self.failure_states or ())
        if both:
            raise ValueError(f"failure_states: {', '.join(sorted(both))} is also a target state")

    def condition(self, job: Mapping[str, Any]) -> Verdict | None:
        return job_condition(job, self.target_states, self.failure_states)

    def make_trigger(self, name: str) -> BaseTrigger:
        from airflow_vertex_dist.triggers.sensors import VertexJobStateTrigger

        return VertexJobStateTrigger(
            target_states=self.target_states, failure_states=self.failure_states, **self._trigger_kwargs(name)
        )


class VertexReplicaSensor(_VertexJobWaitSensor):
    """Wait until replicas of a running job are up (the job must have ``enable_web_access=True``).

    :param job_name: the job's resource name (templated).
    :param replicas: replica keys (``workerpool0-0``, ``workerpool1-3``) and/or whole pools
        (``workerpool1-*``).
    """

    def __init__(self, *, replicas: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.replicas = check_replica_names(replicas)
        if not has_jinja(self.job_name) and parse_job_name(self.job_name).kind != "customJobs":
            raise ValueError(
                f"job_name: {self.job_name!r} is a tuning job; its replicas belong to its trials' CustomJobs"
            )

    def condition(self, job: Mapping[str, Any]) -> Verdict | None:
        return replica_condition(job, self.replicas)

    def make_trigger(self, name: str) -> BaseTrigger:
        from airflow_vertex_dist.triggers.sensors import VertexReplicaTrigger

        return VertexReplicaTrigger(replicas=self.replicas, **self._trigger_kwargs(name))


class VertexTrialSensor(_VertexJobWaitSensor):
    """Wait on the trials of a hyperparameter tuning job.

    :param job_name: the tuning job's resource name (templated).
    :param min_succeeded: succeed once at least this many trials succeeded.
    :param metric_threshold: succeed once the best final value of the study's (first) metric is
        ``>=`` this when maximizing, ``<=`` when minimizing.
    """

    def __init__(
        self, *, min_succeeded: int | None = None, metric_threshold: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        check_trial_condition(min_succeeded, metric_threshold)
        if not has_jinja(self.job_name) and parse_job_name(self.job_name).kind != "hyperparameterTuningJobs":
            raise ValueError(f"job_name: {self.job_name!r} is not a hyperparameterTuningJobs name")
        self.min_succeeded = None if min_succeeded is None else int(min_succeeded)
        self.metric_threshold = None if metric_threshold is None else float(metric_threshold)

    def condition(self, job: Mapping[str, Any]) -> Verdict | None:
        return trial_condition(job, min_succeeded=self.min_succeeded, metric_threshold=self.metric_threshold)

    def outputs(self, job: Mapping[str, Any]) -> TuningOutput:
        return tuning_output(job, self.hook.console_url(str(job["name"])))

    def make_trigger(self, name: str) -> BaseTrigger:
        from airflow_vertex_dist.triggers.sensors import VertexTrialTrigger

        return VertexTrialTrigger(
            min_succeeded=self.min_succeeded,
            metric_threshold=self.metric_threshold,
            **self._trigger_kwargs(name),
        )
