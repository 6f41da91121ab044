"""The same DAG written with apache-airflow-providers-google's Vertex AI operators (the anchor).

Its training operator has no Reduction Server (nor parameter-server or evaluator) pools: the closest
it can say is "1 chief + 4 identical workers", which is what this task builds. Parameters follow the
provider's documented usage (``google.cloud.aiplatform.hyperparameter_tuning`` parameter specs).
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.google.cloud.operators.vertex_ai.custom_job import (
    CreateCustomContainerTrainingJobOperator,
)
from airflow.providers.google.cloud.operators.vertex_ai.hyperparameter_tuning_job import (
    CreateHyperparameterTuningJobOperator,
)
from airflow.sdk import DAG
from google.cloud.aiplatform import hyperparameter_tuning as hpt

IMAGE = "us-docker.pkg.dev/my-project/ml/trainer:1.0"

with DAG("bench_parse_provider", schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False) as dag:
    train = CreateCustomContainerTrainingJobOperator(
        task_id="train",
        project_id="my-project",
        region="us-central1",
        display_name="train-{{ ds_nodash }}",
        container_uri=IMAGE,
        args=["--epochs=10"],
        replica_count=5,
        machine_type="n1-highmem-96",
        accelerator_type="NVIDIA_TESLA_V100",
        accelerator_count=8,
        base_output_dir="gs://my-bucket/train",
        staging_bucket="gs://my-bucket/staging",
    )
    tune = CreateHyperparameterTuningJobOperator(
        task_id="tune",
        project_id="my-project",
        region="us-central1",
        display_name="tune-{{ ds_nodash }}",
        metric_spec={"accuracy": "maximize"},
        parameter_spec={
            "learning_rate": hpt.DoubleParameterSpec(min=1e-4, max=1e-1, scale="log"),
            "batch_size": hpt.IntegerParameterSpec(min=16, max=128, scale="linear"),
            "optimizer": hpt.CategoricalParameterSpec(values=["adam", "sgd"]),
        },
        max_trial_count=16,
        parallel_trial_count=4,
        worker_pool_specs=[
            {
                "machine_spec": {
                    "machine_type": "n1-standard-8",
                    "accelerator_type": "NVIDIA_TESLA_T4",
                    "accelerator_count": 1,
                },
                "replica_count": 1,
                "container_spec": {"image_uri": IMAGE},
            }
        ],
        staging_bucket="gs://my-bucket/staging",
    )
    train >> tune
