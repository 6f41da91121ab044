"""Ready-made specs: the seed's Reduction Server example and a few others, used by the golden
tests, the demo and the docs."""

from __future__ import annotations

from airflow_vertex_dist.specs.cluster import ReductionServer, WorkerPool
from airflow_vertex_dist.specs.job import DistributedTrainingJob
from airflow_vertex_dist.specs.machine import Machine
from airflow_vertex_dist.specs.parameters import (
    CategoricalParameter,
    ConditionalParameter,
    DiscreteParameter,
    DoubleParameter,
    IntegerParameter,
)
from airflow_vertex_dist.specs.study import Metric, Study
from airflow_vertex_dist.specs.task import Container
from airflow_vertex_dist.specs.tuning import HyperparameterTuningJob

__all__ = [
    "A2_MEGAGPU_REDUCTION_SERVER",
    "EVALUATOR_EXAMPLE",
    "PARAMETER_SERVER_EXAMPLE",
    "SEED_REDUCTION_SERVER",
    "TRAINER_IMAGE",
    "TUNING_EXAMPLE",
]

#: The training image the examples run (the emulator maps it to a local command).
TRAINER_IMAGE = "example.com/ml/trainer:1.0"

_V100_PRIMARY = WorkerPool(
    machine=Machine(machine_type="n1-highmem-96", accelerator_type="NVIDIA_TESLA_V100", accelerator_count=8),
    container=Container(image_uri=TRAINER_IMAGE),
)

#: The seed page's example: primary + 4 workers, each ``n1-highmem-96`` with 8 x V100 (100 Gbps),
#: and Reduction Server sized automatically: 500 Gbps / 32 Gbps -> 16 x ``n1-highcpu-16``.
SEED_REDUCTION_SERVER = DistributedTrainingJob(
    display_name="seed-reduction-server",
    primary=_V100_PRIMARY,
    workers=WorkerPool.like(_V100_PRIMARY, replica_count=4),
    reduction_server=ReductionServer(replica_count="auto"),
)

_A2_PRIMARY = WorkerPool(
    machine=Machine(
        machine_type="a2-megagpu-16g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=16
    ),
    container=Container(image_uri=TRAINER_IMAGE),
)

#: The seed's second sizing example: 8 x ``a2-megagpu-16g`` (100 Gbps) -> 25 reducers.
A2_MEGAGPU_REDUCTION_SERVER = DistributedTrainingJob(
    display_name="a2-megagpu-reduction-server",
    primary=_A2_PRIMARY,
    workers=WorkerPool.like(_A2_PRIMARY, replica_count=7),
    reduction_server=ReductionServer(),
)

#: Primary + parameter servers, no workers: renders as ``[primary, {}, parameter servers]``.
PARAMETER_SERVER_EXAMPLE = DistributedTrainingJob(
    display_name="parameter-servers",
    primary=WorkerPool(
        machine=Machine(machine_type="n1-standard-8"),
        container=Container(image_uri=TRAINER_IMAGE, args=("--strategy=parameter_server",)),
    ),
    parameter_servers=WorkerPool(
        machine=Machine(machine_type="n1-highmem-8"),
        replica_count=2,
        container=Container(image_uri=TRAINER_IMAGE, args=("--strategy=parameter_server",)),
    ),
)

#: Primary + one evaluator: renders as ``[primary, {}, {}, evaluator]``.
EVALUATOR_EXAMPLE = DistributedTrainingJob(
    display_name="train-and-evaluate",
    primary=WorkerPool(
        machine=Machine(
            machine_type="n1-standard-8", accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1
        ),
        container=Container(image_uri=TRAINER_IMAGE, args=("--mode=train",)),
    ),
    evaluators=WorkerPool(
        machine=Machine(machine_type="n1-standard-4"),
        container=Container(image_uri=TRAINER_IMAGE, args=("--mode=evaluate",)),
    ),
)

#: A small study over a learning rate, a batch size and an optimizer with a conditional child.
TUNING_EXAMPLE = HyperparameterTuningJob(
    display_name="tune-trainer",
    trial_job=DistributedTrainingJob(
        display_name="tune-trainer-trial",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(image_uri=TRAINER_IMAGE, args=("--epochs=3",)),
        ),
    ),
    study=Study(
        metrics=(Metric(metric_id="accuracy", goal="MAXIMIZE"),),
        parameters=(
            DoubleParameter(parameter_id="learning_rate", min_value=1e-4, max_value=1e-1, scale_type="LOG"),
            IntegerParameter(parameter_id="batch_size", min_value=16, max_value=128, scale_type="LINEAR"),
            CategoricalParameter(
                parameter_id="optimizer",
                values=("adam", "sgd"),
                conditional_parameters=(
                    ConditionalParameter(
                        parent_values=("sgd",),
                        parameter=DiscreteParameter(parameter_id="momentum", values=(0.0, 0.5, 0.9)),
                    ),
                ),
            ),
        ),
    ),
    max_trial_count=8,
    parallel_trial_count=2,
)
