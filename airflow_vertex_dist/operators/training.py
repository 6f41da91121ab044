"""``VertexTrainingOperator``: run a ``DistributedTrainingJob``."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from airflow_vertex_dist.jobs.kinds import CUSTOM_JOBS, JobKind
from airflow_vertex_dist.operators.job import VertexJobOperator
from airflow_vertex_dist.specs import DistributedTrainingJob

__all__ = ["VertexTrainingOperator"]


class VertexTrainingOperator(VertexJobOperator):
    """Submit a distributed training job as a Vertex AI CustomJob and wait for it.

    The XCom return value is the job as JSON: ``name``, ``id``, ``state``, ``create_time``,
    ``start_time``, ``end_time``, ``console_url``, ``error``. See ``VertexJobOperator`` for the
    parameters (``spec`` is a ``DistributedTrainingJob`` or its dict).
    """

    job_kind: ClassVar[JobKind] = CUSTOM_JOBS
    spec_model: ClassVar[type[BaseModel]] = DistributedTrainingJob
