"""The deferrable triggers of the job, replica and trial sensors.

What they wait for is pure and lives in :mod:`airflow_vertex_dist.triggers.conditions`; its names are
re-exported here for the code that imported them from this module.

The triggers carry JSON kwargs only and get the job from the shared poller of the triggerer process
(:func:`~airflow_vertex_dist.triggers.poller.watch_job`), so N waiting sensors cost about one List call
per interval. Each logs the job's progress (state changes, replicas up k/n, trials done k/N) and fires
one event, ``{"status": "success" | "error", "message": str, "job": <compact job> | None}``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_vertex_dist.hooks.connection import parse_impersonation_chain
from airflow_vertex_dist.hooks.job_dicts import FAILURE_STATES, TERMINAL_STATES, compact_job
from airflow_vertex_dist.triggers.conditions import (
    ProgressLog,
    Verdict,
    best_trial,
    check_replica_names,
    check_trial_condition,
    expected_replicas,
    job_condition,
    normalize_state,
    replica_condition,
    replicas_up,
    resolve_replicas,
    study_metric,
    trial_condition,
    trial_metric,
    trial_summary,
    web_access_enabled,
)

__all__ = [
    "FAILURE_STATES",
    "TERMINAL_STATES",
    "ProgressLog",
    "Verdict",
    "VertexJobStateTrigger",
    "VertexReplicaTrigger",
    "VertexTrialTrigger",
    "best_trial",
    "check_replica_names",
    "check_trial_condition",
    "expected_replicas",
    "job_condition",
    "normalize_state",
    "replica_condition",
    "replicas_up",
    "resolve_replicas",
    "study_metric",
    "trial_condition",
    "trial_metric",
    "trial_summary",
    "web_access_enabled",
]

_CLASSPATH = __name__


class _SensorTrigger(BaseTrigger):
    """Polls one job until :meth:`evaluate` gives a verdict, then fires one event and ends.

    Event payload: ``{"status": "success" | "error", "message": str, "job": <compact job>}``. A sensor
    watches a job it does not own: killing the sensor never cancels the job.
    """

    def __init__(
        self,
        *,
        job_name: str,
        conn_id: str,
        project_id: str | None = None,
        location: str | None = None,
        poll_interval: float = 10.0,
        stream_logs: Any = None,
        log_timestamp: str = "",
        log_insert_id: str = "",
        impersonation_chain: str | Sequence[str] = "",
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.job_name = job_name
        self.conn_id = conn_id
        self.project_id = project_id
        self.location = location
        self.poll_interval = float(poll_interval)
        #: replica log streaming, as VertexJobTrigger does it (triggers/log_stream.py); None: off
        self.stream_logs = stream_logs
        self.log_timestamp = str(log_timestamp or "")
        self.log_insert_id = str(log_insert_id or "")
        #: the task's own chain (comma-joined: kwargs are JSON scalars); "" means the connection's
        self.impersonation_chain = ",".join(parse_impersonation_chain(impersonation_chain))

    def _kwargs(self) -> dict[str, Any]:
        return {}

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{_CLASSPATH}.{type(self).__name__}",
            {
                "job_name": self.job_name,
                "conn_id": self.conn_id,
                "project_id": self.project_id,
                "location": self.location,
                "poll_interval": self.poll_interval,
                "stream_logs": self.stream_logs,
                "log_timestamp": self.log_timestamp,
                "log_insert_id": self.log_insert_id,
                "impersonation_chain": self.impersonation_chain,
                **self._kwargs(),
            },
        )

    def evaluate(self, job: dict[str, Any]) -> Verdict | None:
        raise NotImplementedError

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_vertex_dist.triggers.poller import JobNotFoundError, watch_job

        def event(status: str, message: str, job: dict[str, Any] | None) -> TriggerEvent:
            payload = {"status": status, "message": message, "job": compact_job(job) if job else None}
            return TriggerEvent(payload)  # type: ignore[no-untyped-call]

        from airflow_vertex_dist.triggers.log_stream import log_stream_start

        progress = ProgressLog()
        logs = log_stream_start(self) if self.stream_logs is not None else None
        try:
            async with watch_job(
                self.job_name,
                conn_id=self.conn_id,
                poll_interval=self.poll_interval,
                impersonation_chain=parse_impersonation_chain(self.impersonation_chain),
            ) as updates:
                async for job in updates:
                    for line in progress.update(job):
                        self.log.info("%s", line)
                    verdict = self.evaluate(job)
                    if verdict is not None:
                        if logs is not None:
                            await logs.finish(timeout=2 * self.poll_interval + 5)
                        yield event(verdict.status, verdict.message, job)
                        return
        except JobNotFoundError as exc:
            yield event("error", str(exc), None)
        except Exception as exc:  # a non-transient API error (transient ones never end the wait)
            self.log.error("Waiting on %s failed: %s", self.job_name, exc)
            yield event("error", f"waiting on job {self.job_name} failed: {exc}", None)
        finally:
            if logs is not None:
                logs.close()


class VertexJobStateTrigger(_SensorTrigger):
    """Waits for the job to reach one of ``target_states``; fails fast on ``failure_states``."""

    def __init__(
        self,
        *,
        target_states: Sequence[str] = ("JOB_STATE_SUCCEEDED",),
        failure_states: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.target_states = [normalize_state(s) for s in target_states]
        self.failure_states = (
            None
            if failure_states is None
            else [normalize_state(s, field="failure_states") for s in failure_states]
        )

    def _kwargs(self) -> dict[str, Any]:
        return {"target_states": self.target_states, "failure_states": self.failure_states}

    def evaluate(self, job: dict[str, Any]) -> Verdict | None:
        return job_condition(job, self.target_states, self.failure_states)


class VertexReplicaTrigger(_SensorTrigger):
    """Waits for named replicas or whole pools (``workerpool1-*``) to be up."""

    def __init__(self, *, replicas: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.replicas = check_replica_names(replicas)

    def _kwargs(self) -> dict[str, Any]:
        return {"replicas": self.replicas}

    def evaluate(self, job: dict[str, Any]) -> Verdict | None:
        return replica_condition(job, self.replicas)


class VertexTrialTrigger(_SensorTrigger):
    """Waits for ``min_succeeded`` trials, or for the best metric to cross ``metric_threshold``."""

    def __init__(
        self, *, min_succeeded: int | None = None, metric_threshold: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        check_trial_condition(min_succeeded, metric_threshold)
        self.min_succeeded = None if min_succeeded is None else int(min_succeeded)
        self.metric_threshold = None if metric_threshold is None else float(metric_threshold)

    def _kwargs(self) -> dict[str, Any]:
        return {"min_succeeded": self.min_succeeded, "metric_threshold": self.metric_threshold}

    def evaluate(self, job: dict[str, Any]) -> Verdict | None:
        return trial_condition(job, min_succeeded=self.min_succeeded, metric_threshold=self.metric_threshold)
