"""A nightly training on a two-rung ladder, for the rehearsal tests: an A100 first (given up after an
hour PENDING), then an L4. The replica's code is a one-line print: the rehearsal's night decides."""

import sys
from datetime import datetime, timedelta, timezone

from airflow.sdk import DAG

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import (
    CapacityLadder,
    Container,
    DistributedTrainingJob,
    Machine,
    MachineOverride,
    Rung,
    WorkerPool,
)

A100 = Machine(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)
L4 = MachineOverride(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)
TRAINER = Container(image_uri="python:3.11", command=(sys.executable, "-c", "print('trained')"))

with DAG("nightly", schedule="@daily", start_date=datetime(2026, 1, 1, tzinfo=timezone.utc), catchup=False):
    VertexTrainingOperator(
        task_id="train",
        spec=DistributedTrainingJob(
            display_name="nightly-{{ ds_nodash }}", primary=WorkerPool(machine=A100, container=TRAINER)
        ),
        capacity=CapacityLadder(
            rungs=(Rung(name="a100", pending_limit=timedelta(hours=1)), Rung(name="l4", machine=L4))
        ),
        deferrable=True,
        poll_interval=60,
    )
