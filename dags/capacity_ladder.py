"""Weekly retraining on a capacity ladder: A100 reservation, then A100 Spot, then L4 in another region.

The week's data is snapshotted as in ``retraining.py``; ``train`` runs the parameter-server trainer on
a primary and one worker (2 GPUs in all) on the first rung that gets capacity:

1. ``a100-reserved``: 2 x ``a2-highgpu-1g`` (1 A100 each) on any matching reservation, in the
   connection's region; given up after ``PENDING_LIMIT`` without starting, or at once when the job
   fails with the region's stockout ("Resources are insufficient in region").
2. ``a100-spot``: the same machines as Spot VMs, same region; a preemption restarts the rung (twice
   at most, after a backoff), a stockout or the pending limit moves on. The spec's ``checkpoints``
   says the trainer resumes from ``AIP_CHECKPOINT_DIR`` (``--resume``), which a Spot rung needs; each
   preemption is logged with the time lost since the last checkpoint there.
3. ``l4-east``: 2 x ``g2-standard-8`` (1 L4 each) in ``us-east1`` (the ladder's allow-list of
   regions), on demand.

At most one job of the task is live at any moment (a rung is left once its job has ended or been
cancelled); the task log names each rung change, and the XCom's ``rung`` says which rung ran and why
the ones before it were left. ``gpu_pool`` admits the task through an Airflow pool by its 2 GPUs:
create the pool with as many slots as your GPU quota, counting deferred tasks (``airflow pools set
a100-quota 8 "GPU quota" --include-deferred``: the task defers), and a backfill never asks for more
GPUs at once. The rungs' prices per hour are in the task log (and
``airflow-vertex-dist render``); the ladder refuses, when the file is parsed, a rung above
``max_price_per_hour``.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow.sdk import DAG, CronDataIntervalTimetable, task
from examples_common import BUCKET, CONN_ID, POLL_INTERVAL, PS_TRAINER_IMAGE, join, writable_dir

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import (
    CapacityLadder,
    Checkpoints,
    Container,
    DistributedTrainingJob,
    Machine,
    MachineOverride,
    ReservationAffinity,
    Rung,
    Scheduling,
    WorkerPool,
)

DAG_ID = "vertex_dist_capacity_ladder"
ROOT = join(BUCKET, "capacity-ladder")
WEEK = "{{data_interval_start|ds_nodash}}-{{data_interval_end|ds_nodash}}"
DATA_URI = join(ROOT, "data", WEEK)
OUTPUT_URI = join(ROOT, "models", WEEK)
ROWS = 1200
#: the Airflow pool holding the GPU quota (slots = GPUs); ``VERTEX_DIST_EXAMPLES_GPU_POOL``.
GPU_POOL = os.environ.get("VERTEX_DIST_EXAMPLES_GPU_POOL", "default_pool")
#: seconds a rung's job may wait QUEUED/PENDING before the ladder moves on (default 15 minutes).
PENDING_LIMIT = timedelta(seconds=float(os.environ.get("VERTEX_DIST_EXAMPLES_PENDING_LIMIT", "900")))

A100 = Machine(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)
L4 = MachineOverride(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)

primary = WorkerPool(
    machine=A100,
    container=Container(
        image_uri=PS_TRAINER_IMAGE,
        args=(
            f"--data-dir={DATA_URI}",
            "--epochs=3",
            "--batch_size=64",
            "--learning_rate=0.5",
            "--metric-id=accuracy",
            "--resume",  # a Spot restart or the next rung continues from the last checkpoint
        ),
    ),
)

SPEC = DistributedTrainingJob(
    display_name="ladder-{{data_interval_end|ds_nodash}}",
    primary=primary,
    workers=WorkerPool.like(primary, replica_count=1),
    base_output_directory=OUTPUT_URI,
    # the trainer resumes (--resume) from the newest ckpt-<step>.json in AIP_CHECKPOINT_DIR
    checkpoints=Checkpoints(match_glob="ckpt-*.json"),
    scheduling=Scheduling(timeout=timedelta(hours=4)),
    labels={"example": "capacity-ladder"},
)

LADDER = CapacityLadder(
    regions=("us-east1",),  # the only region a rung may move the job to
    max_price_per_hour=20.0,  # USD per hour for the whole job: a pricier rung fails the parse
    rungs=(
        Rung(
            name="a100-reserved",
            machine=MachineOverride(
                reservation_affinity=ReservationAffinity(reservation_affinity_type="ANY_RESERVATION")
            ),
            pending_limit=PENDING_LIMIT,
        ),
        Rung(
            name="a100-spot",
            strategy="SPOT",
            pending_limit=PENDING_LIMIT,
            retries=2,
            retry_backoff=timedelta(minutes=2),
        ),
        Rung(name="l4-east", region="us-east1", machine=L4),
    ),
)


@task
def snapshot_week(data_interval_start: Any = None, data_interval_end: Any = None) -> dict[str, Any]:
    """Write the week's rows (train/eval CSV + manifest) where the training job reads them."""
    from trainers.prep import prepare

    start, end = data_interval_start.strftime("%Y%m%d"), data_interval_end.strftime("%Y%m%d")
    uri = join(ROOT, "data", f"{start}-{end}")
    with writable_dir(uri) as out:
        manifest = prepare(out, rows=ROWS, seed=int(start), interval=[start, end])
    return {"uri": uri, **manifest}


with DAG(
    DAG_ID,
    schedule=CronDataIntervalTimetable("@weekly", timezone="UTC"),
    start_date=datetime(2026, 1, 4, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=2)},
    tags=["vertex-dist", "example", "capacity"],
    doc_md=__doc__,
) as dag:
    train = VertexTrainingOperator(
        task_id="train",
        spec=SPEC,
        capacity=LADDER,
        gpu_pool=GPU_POOL,  # pool_slots = the job's 2 GPUs
        vertex_dist_conn_id=CONN_ID,
        deferrable=True,
        poll_interval=POLL_INTERVAL,
        execution_timeout=timedelta(hours=6),
    )
    snapshot_week() >> train
