"""Sensors on a Vertex AI job, its replicas and its trials (poking or deferred)."""

from __future__ import annotations

from airflow_vertex_dist.sensors.jobs import VertexJobSensor, VertexReplicaSensor, VertexTrialSensor

__all__ = ["VertexJobSensor", "VertexReplicaSensor", "VertexTrialSensor"]
