"""Operators: run a distributed training job or a tuning study on Vertex AI, or cancel a job.

Importing them loads no ``google.cloud`` module: the hook imports its clients on first use.
"""

from __future__ import annotations

from airflow_vertex_dist.operators.cancel import VertexCancelJobOperator
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.operators.tuning import VertexTuningOperator

__all__ = ["VertexCancelJobOperator", "VertexTrainingOperator", "VertexTuningOperator"]
