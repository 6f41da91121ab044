"""``VertexTuningOperator``: run a ``HyperparameterTuningJob``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from airflow_vertex_dist.jobs.kinds import TUNING_JOBS, JobKind
from airflow_vertex_dist.jobs.outputs import tuning_output
from airflow_vertex_dist.operators.job import VertexJobOperator
from airflow_vertex_dist.specs import HyperparameterTuningJob

if TYPE_CHECKING:
    from airflow_vertex_dist.jobs.output_types import TuningOutput

__all__ = ["VertexTuningOperator"]


class VertexTuningOperator(VertexJobOperator):
    """Submit a hyperparameter tuning job and wait for it.

    The XCom return value is the job as JSON (as ``VertexTrainingOperator`` returns it) plus
    ``trial_counts``, ``best_trial`` (``{"id", "parameters", "metric_id", "metric_value", "goal"}``,
    the best succeeded trial in the study's direction) and ``trials`` (a compact row per trial).
    See ``VertexJobOperator`` for the parameters (``spec`` is a
    ``HyperparameterTuningJob`` or its dict).
    """

    job_kind: ClassVar[JobKind] = TUNING_JOBS
    spec_model: ClassVar[type[BaseModel]] = HyperparameterTuningJob

    def job_outputs(self, job: Mapping[str, Any]) -> TuningOutput:
        console = self.hook.console_url(str(job["name"]))
        ledger = self.task_ledger(job)
        return tuning_output(job, console, rung=self.rung_output(), cost=self.job_cost(job), ledger=ledger)
