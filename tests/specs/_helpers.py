"""Shared helpers of the spec tests."""

from __future__ import annotations

import json
from typing import Any

from airflow_vertex_dist.specs import (
    Container,
    DistributedTrainingJob,
    HyperparameterTuningJob,
    Machine,
    WorkerPool,
)

__all__ = ["canonical", "parse_proto", "pool", "to_json_body"]


def canonical(body: dict[str, Any]) -> str:
    """The byte form golden files store."""
    return json.dumps(body, sort_keys=True, indent=2) + "\n"


def parse_proto(body: dict[str, Any], tuning: bool = False) -> Any:
    """Parse a render with the generated v1 types, refusing unknown fields."""
    from google.cloud import aiplatform_v1

    cls = aiplatform_v1.HyperparameterTuningJob if tuning else aiplatform_v1.CustomJob
    return cls.from_json(json.dumps(body), ignore_unknown_fields=False)


def to_json_body(spec: DistributedTrainingJob | HyperparameterTuningJob, **kwargs: Any) -> dict[str, Any]:
    """``spec`` rendered, parsed as the proto and written back by the proto's own ``to_json``."""
    tuning = isinstance(spec, HyperparameterTuningJob)
    message = parse_proto(spec.to_api(), tuning)
    return dict(json.loads(type(message).to_json(message, **kwargs)))


def pool(machine_type: str = "n1-standard-4", replicas: int = 1, **machine: Any) -> WorkerPool:
    return WorkerPool(
        machine=Machine(machine_type=machine_type, **machine),
        replica_count=replicas,
        container=Container(image_uri="example.com/ml/trainer:1.0"),
    )
