"""Operators: run a distributed training job or a tuning study on Vertex AI, or cancel a job.

Importing them loads no ``google.cloud`` module: the hook imports its clients on first use. Each
operator's module is imported when its name is first looked up here, so a DAG file parses only the
operators it uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_vertex_dist.operators.cancel import VertexCancelJobOperator
    from airflow_vertex_dist.operators.persistent_resources import (
        VertexDeletePersistentResourceOperator,
        VertexEnsurePersistentResourceOperator,
        VertexSweepPersistentResourcesOperator,
    )
    from airflow_vertex_dist.operators.training import VertexTrainingOperator
    from airflow_vertex_dist.operators.tuning import VertexTuningOperator

__all__ = [
    "VertexCancelJobOperator",
    "VertexDeletePersistentResourceOperator",
    "VertexEnsurePersistentResourceOperator",
    "VertexSweepPersistentResourcesOperator",
    "VertexTrainingOperator",
    "VertexTuningOperator",
]

_MODULES = {
    "VertexCancelJobOperator": "cancel",
    "VertexDeletePersistentResourceOperator": "persistent_resources",
    "VertexEnsurePersistentResourceOperator": "persistent_resources",
    "VertexSweepPersistentResourcesOperator": "persistent_resources",
    "VertexTrainingOperator": "training",
    "VertexTuningOperator": "tuning",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
