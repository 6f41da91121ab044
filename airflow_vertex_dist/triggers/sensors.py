"""The deferrable triggers of the job, replica and trial sensors.

What they wait for is pure and lives in ``airflow_vertex_dist.jobs``. The waiting
itself (the shared poller, the progress log, the replica log stream, serialization, the one event) is
``JobWaitTrigger``'s: these triggers only say when the wait is
over. N waiting sensors cost about one List call per interval. Each fires one event,
``{"status": "success" | "error", "message": str, "job": <compact job> | None}``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from airflow_vertex_dist.common.replicas import check_replica_names
from airflow_vertex_dist.jobs.events import JobEvent, Verdict
from airflow_vertex_dist.jobs.replicas import replica_condition
from airflow_vertex_dist.jobs.states import job_condition, normalize_state
from airflow_vertex_dist.jobs.trials import check_trial_condition, trial_condition
from airflow_vertex_dist.jobs.types import Job
from airflow_vertex_dist.triggers.base import JobWaitTrigger

__all__ = [
    "SensorTrigger",
    "VertexJobStateTrigger",
    "VertexReplicaTrigger",
    "VertexTrialTrigger",
]


class SensorTrigger(JobWaitTrigger):
    """Polls one job until ``evaluate`` gives a verdict, then fires one event and ends.

    A sensor watches a job it does not own: killing the sensor never cancels the job, and its
    progress lines say the job was ``found``, not submitted.
    """

    first_seen = "found"

    @abc.abstractmethod
    def evaluate(self, job: Job) -> Verdict | None:
        """The verdict on this job update, ``None`` while the condition is pending."""

    async def decide(self, job: Job) -> JobEvent | None:
        verdict = self.evaluate(job)
        return None if verdict is None else self.event(verdict.status, verdict.message, job)


class VertexJobStateTrigger(SensorTrigger):
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

    def serialize_kwargs(self) -> dict[str, Any]:
        return {"target_states": self.target_states, "failure_states": self.failure_states}

    def evaluate(self, job: Job) -> Verdict | None:
        return job_condition(job, self.target_states, self.failure_states)


class VertexReplicaTrigger(SensorTrigger):
    """Waits for named replicas or whole pools (``workerpool1-*``) to be up."""

    def __init__(self, *, replicas: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.replicas = check_replica_names(replicas)

    def serialize_kwargs(self) -> dict[str, Any]:
        return {"replicas": self.replicas}

    def evaluate(self, job: Job) -> Verdict | None:
        return replica_condition(job, self.replicas)


class VertexTrialTrigger(SensorTrigger):
    """Waits for ``min_succeeded`` trials, or for the best metric to cross ``metric_threshold``."""

    def __init__(
        self, *, min_succeeded: int | None = None, metric_threshold: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        check_trial_condition(min_succeeded, metric_threshold)
        self.min_succeeded = None if min_succeeded is None else int(min_succeeded)
        self.metric_threshold = None if metric_threshold is None else float(metric_threshold)

    def serialize_kwargs(self) -> dict[str, Any]:
        return {"min_succeeded": self.min_succeeded, "metric_threshold": self.metric_threshold}

    def evaluate(self, job: Job) -> Verdict | None:
        return trial_condition(job, min_succeeded=self.min_succeeded, metric_threshold=self.metric_threshold)
