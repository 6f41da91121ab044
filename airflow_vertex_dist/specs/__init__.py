"""Typed, validated specs of Vertex AI training clusters and studies, rendered as v1 REST bodies.

Pure: importing this package loads neither Airflow nor any ``google.cloud`` module.
"""

from __future__ import annotations

from airflow_vertex_dist.specs.cluster import (
    Container,
    Disk,
    DnsPeeringConfig,
    LustreMount,
    Machine,
    NfsMount,
    PscInterfaceConfig,
    PythonPackage,
    ReductionServer,
    ReservationAffinity,
    Scheduling,
    WorkerPool,
    reduction_server_image,
)
from airflow_vertex_dist.specs.job import DistributedTrainingJob

__all__ = [
    "Container",
    "Disk",
    "DistributedTrainingJob",
    "DnsPeeringConfig",
    "LustreMount",
    "Machine",
    "NfsMount",
    "PscInterfaceConfig",
    "PythonPackage",
    "ReductionServer",
    "ReservationAffinity",
    "Scheduling",
    "WorkerPool",
    "reduction_server_image",
]
