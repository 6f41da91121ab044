"""A Reduction Server training task (the seed's 1 + 4 x 8 V100, reducers sized automatically) and a
tuning task, written with this provider's operators and specs."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.operators.tuning import VertexTuningOperator
from airflow_vertex_dist.specs import (
    CategoricalParameter,
    Container,
    DistributedTrainingJob,
    DoubleParameter,
    HyperparameterTuningJob,
    IntegerParameter,
    Machine,
    Metric,
    ReductionServer,
    Study,
    WorkerPool,
)

IMAGE = "us-docker.pkg.dev/my-project/ml/trainer:1.0"

primary = WorkerPool(
    machine=Machine(machine_type="n1-highmem-96", accelerator_type="NVIDIA_TESLA_V100", accelerator_count=8),
    container=Container(image_uri=IMAGE, args=("--epochs=10",)),
)
training = DistributedTrainingJob(
    display_name="train-{{ ds_nodash }}",
    primary=primary,
    workers=WorkerPool.like(primary, replica_count=4),
    reduction_server=ReductionServer(replica_count="auto"),
    base_output_directory="gs://my-bucket/train",
)
tuning = HyperparameterTuningJob(
    display_name="tune-{{ ds_nodash }}",
    trial_job=DistributedTrainingJob(
        display_name="tune-trial",
        primary=WorkerPool(
            machine=Machine(
                machine_type="n1-standard-8", accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1
            ),
            container=Container(image_uri=IMAGE),
        ),
    ),
    study=Study(
        metrics=(Metric(metric_id="accuracy", goal="MAXIMIZE"),),
        parameters=(
            DoubleParameter(parameter_id="learning_rate", min_value=1e-4, max_value=1e-1, scale_type="LOG"),
            IntegerParameter(parameter_id="batch_size", min_value=16, max_value=128, scale_type="LINEAR"),
            CategoricalParameter(parameter_id="optimizer", values=("adam", "sgd")),
        ),
    ),
    max_trial_count=16,
    parallel_trial_count=4,
)

with DAG("bench_parse_ours", schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False) as dag:
    train = VertexTrainingOperator(
        task_id="train", spec=training, project_id="my-project", location="us-central1"
    )
    tune = VertexTuningOperator(task_id="tune", spec=tuning, project_id="my-project", location="us-central1")
    train >> tune
