"""Nightly retraining on A100 Spot VMs that resumes from its checkpoints, then on demand.

``train`` runs the parameter-server trainer alone on one ``a2-highgpu-1g`` (1 A100) for ``EPOCHS``
epochs, first as a Spot VM: cheaper, and preempted at Compute Engine's will. Vertex AI restarts a
preempted job (six times at most), with the same ``AIP_CHECKPOINT_DIR``; the trainer writes a checkpoint
after every epoch there and, with ``--resume``, starts from the newest one: a preemption costs the run
since the last checkpoint, at most an epoch, not the night. The spec says so (``checkpoints``: the
checkpoint contract), which a SPOT rung needs; each preemption is logged with the time it cost, read
back from the checkpoint directory, and the task's cost ledger counts it.

1. ``a100-spot``: Spot; a job failed by its preemptions is retried once after a backoff, a stockout
   or ``PENDING_LIMIT`` without starting moves on.
2. ``a100``: the same machine on demand.

``EPOCH_SECONDS`` (``VERTEX_DIST_EXAMPLES_EPOCH_SECONDS``, default 0: as fast as the trainer trains)
makes each epoch last at least that many real seconds: the pace of a bigger model, for a rehearsal
(``dags/scenarios/spot-preemptions-every-20-min.yaml``) whose preemptions must fall between checkpoints.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

from airflow.sdk import DAG
from examples_common import BUCKET, CONN_ID, POLL_INTERVAL, PS_TRAINER_IMAGE, join

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import (
    CapacityLadder,
    Checkpoints,
    Container,
    DistributedTrainingJob,
    Machine,
    Rung,
    Scheduling,
    WorkerPool,
)

DAG_ID = "vertex_dist_spot_checkpoints"
OUTPUT_URI = join(BUCKET, "spot-checkpoints", "models", "{{ ds_nodash }}")
EPOCHS = 6
#: the least real seconds an epoch lasts (``--epoch-seconds``); ``VERTEX_DIST_EXAMPLES_EPOCH_SECONDS``
EPOCH_SECONDS = float(os.environ.get("VERTEX_DIST_EXAMPLES_EPOCH_SECONDS", "0"))
#: seconds a rung's job may wait QUEUED/PENDING before the ladder moves on (default 15 minutes).
PENDING_LIMIT = timedelta(seconds=float(os.environ.get("VERTEX_DIST_EXAMPLES_PENDING_LIMIT", "900")))

A100 = Machine(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)

SPEC = DistributedTrainingJob(
    display_name="spot-{{ ds_nodash }}",
    primary=WorkerPool(
        machine=A100,
        container=Container(
            image_uri=PS_TRAINER_IMAGE,
            args=(
                "--rows=1200",
                f"--epochs={EPOCHS}",
                "--batch_size=64",
                "--learning_rate=0.5",
                f"--epoch-seconds={EPOCH_SECONDS:g}",
                "--resume",  # from the newest checkpoint in AIP_CHECKPOINT_DIR, after a preemption
            ),
        ),
    ),
    base_output_directory=OUTPUT_URI,
    # the checkpoint contract: the trainer resumes from the newest ckpt-<step>.json in AIP_CHECKPOINT_DIR
    checkpoints=Checkpoints(match_glob="ckpt-*.json"),
    scheduling=Scheduling(timeout=timedelta(hours=6)),
    labels={"example": "spot-checkpoints"},
)

LADDER = CapacityLadder(
    rungs=(
        Rung(
            name="a100-spot",
            strategy="SPOT",
            pending_limit=PENDING_LIMIT,
            retries=1,
            retry_backoff=timedelta(minutes=2),
        ),
        Rung(name="a100"),
    ),
)

with DAG(
    DAG_ID,
    schedule="@daily",
    start_date=datetime(2026, 1, 4, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["vertex-dist", "example", "capacity"],
    doc_md=__doc__,
) as dag:
    VertexTrainingOperator(
        task_id="train",
        spec=SPEC,
        capacity=LADDER,
        vertex_dist_conn_id=CONN_ID,
        deferrable=True,
        poll_interval=POLL_INTERVAL,
        execution_timeout=timedelta(hours=8),
    )
