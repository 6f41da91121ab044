"""Typed, validated specs of Vertex AI training clusters and studies, rendered as v1 REST bodies.

Pure: importing this package loads neither Airflow nor any ``google.cloud`` module.

- ``DistributedTrainingJob`` -> ``CustomJob`` (``to_api()`` / ``from_api()``)
- ``HyperparameterTuningJob`` -> ``HyperparameterTuningJob``
- ``load_spec`` reads a spec from a JSON/YAML file or ``module:attribute``
- ``pools_table`` shows the pools as a plain-text table
- ``CapacityLadder`` / ``Rung``: the rungs a task may run its job on when capacity is short
- ``PersistentResource`` / ``ResourcePool``: a persistent resource's shape; ``PersistentResourceUse``
  runs a rung on one
"""

from __future__ import annotations

from airflow_vertex_dist.specs.bandwidth import egress_gbps
from airflow_vertex_dist.specs.capacity import CapacityLadder, MachineOverride, PoolOverride, Rung
from airflow_vertex_dist.specs.checkpoints import Checkpoints
from airflow_vertex_dist.specs.cluster import (
    POOL_ROLES,
    LustreMount,
    NfsMount,
    ReductionServer,
    WorkerPool,
    is_reduction_server_image,
    reduction_server_image,
)
from airflow_vertex_dist.specs.errors import SpecValidationError, error_lines, error_text
from airflow_vertex_dist.specs.job import DistributedTrainingJob
from airflow_vertex_dist.specs.job_rules import ReducerSizing
from airflow_vertex_dist.specs.loading import Spec, load_spec, spec_from_dict
from airflow_vertex_dist.specs.machine import Disk, Machine, ReservationAffinity
from airflow_vertex_dist.specs.options import DnsPeeringConfig, PscInterfaceConfig, Scheduling
from airflow_vertex_dist.specs.parameters import (
    CategoricalParameter,
    ConditionalParameter,
    DiscreteParameter,
    DoubleParameter,
    IntegerParameter,
    Parameter,
)
from airflow_vertex_dist.specs.persistent import PersistentResource, PersistentResourceUse, ResourcePool
from airflow_vertex_dist.specs.stopping import (
    ConvexAutomatedStopping,
    DecayCurveAutomatedStopping,
    MedianAutomatedStopping,
    StudyStoppingConfig,
    StudyTimeConstraint,
)
from airflow_vertex_dist.specs.study import Metric, SafetyMetricConfig, Study
from airflow_vertex_dist.specs.table import pools_table
from airflow_vertex_dist.specs.task import Container, PythonPackage
from airflow_vertex_dist.specs.tuning import HyperparameterTuningJob

__all__ = [
    "POOL_ROLES",
    "CapacityLadder",
    "CategoricalParameter",
    "Checkpoints",
    "ConditionalParameter",
    "Container",
    "ConvexAutomatedStopping",
    "DecayCurveAutomatedStopping",
    "DiscreteParameter",
    "Disk",
    "DistributedTrainingJob",
    "DnsPeeringConfig",
    "DoubleParameter",
    "HyperparameterTuningJob",
    "IntegerParameter",
    "LustreMount",
    "Machine",
    "MachineOverride",
    "MedianAutomatedStopping",
    "Metric",
    "NfsMount",
    "Parameter",
    "PersistentResource",
    "PersistentResourceUse",
    "PoolOverride",
    "PscInterfaceConfig",
    "PythonPackage",
    "ReducerSizing",
    "ReductionServer",
    "ReservationAffinity",
    "ResourcePool",
    "Rung",
    "SafetyMetricConfig",
    "Scheduling",
    "Spec",
    "SpecValidationError",
    "Study",
    "StudyStoppingConfig",
    "StudyTimeConstraint",
    "WorkerPool",
    "egress_gbps",
    "error_lines",
    "error_text",
    "is_reduction_server_image",
    "load_spec",
    "pools_table",
    "reduction_server_image",
    "spec_from_dict",
]
