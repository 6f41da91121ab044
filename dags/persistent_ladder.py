"""Weekly retraining on held VMs first: a persistent resource, then on-demand A100s, then A100 Spot VMs.

``train`` runs the parameter-server trainer on a primary and one worker (1 A100 each) on the first rung
that gets capacity:

1. ``reserved``: the persistent resource ``RESOURCE_ID`` (``a2-highgpu-1g`` x 4: room for two runs'
   jobs at once, a backfill's), which the task *ensures*: creates it when it is missing, reuses it
   run after run when it has the same pools. Its job starts on the resource's VMs without waiting for
   new ones. Given up when the resource cannot come up (a stockout of its 4 A100s, its Create refused
   over quota) or the job does not start within ``PENDING_LIMIT`` (the resource's creation and the job's
   wait together), and when the resource is deleted or rebooted under the job.
2. ``on-demand``: the same machines, created for the job.
3. ``spot``: the same machines as Spot VMs; a preemption restarts the rung (twice at most, after a
   backoff). The spec's ``checkpoints`` says the trainer resumes from ``AIP_CHECKPOINT_DIR``
   (``--resume``), which a Spot rung needs; a rung change resumes from there too.

The task never deletes the resource: ``IDLE_TIMEOUT`` (labelled on it) is longer than the week between
runs, so the next run finds it. The second DAG of this file, ``vertex_dist_sweep_persistent_resources``,
deletes every resource this provider ensured once no job has used it for its idle timeout (a run that
fell back to rung 2 or 3 does not use it). Runs of the week are one live job at a time; the XCom's
``rung`` says which rung ran and why the ones before it were left, and its ``ledger`` what it cost.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

from airflow.sdk import DAG
from examples_common import BUCKET, CONN_ID, POLL_INTERVAL, PS_TRAINER_IMAGE, join

from airflow_vertex_dist.operators import VertexSweepPersistentResourcesOperator
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import (
    CapacityLadder,
    Checkpoints,
    Container,
    DistributedTrainingJob,
    Machine,
    PersistentResource,
    PersistentResourceUse,
    ResourcePool,
    Rung,
    Scheduling,
    WorkerPool,
)

DAG_ID = "vertex_dist_persistent_ladder"
SWEEP_DAG_ID = "vertex_dist_sweep_persistent_resources"
WEEK = "{{data_interval_start|ds_nodash}}-{{data_interval_end|ds_nodash}}"
OUTPUT_URI = join(BUCKET, "persistent-ladder", "models", WEEK)
RESOURCE_ID = "a100-weekly"
#: no job on the resource for this long and the sweep deletes it: longer than the week between runs
IDLE_TIMEOUT = timedelta(days=8)
#: seconds a rung may wait for its resource and its job to start before the ladder moves on (default
#: 30 minutes); ``VERTEX_DIST_EXAMPLES_PENDING_LIMIT``
PENDING_LIMIT = timedelta(seconds=float(os.environ.get("VERTEX_DIST_EXAMPLES_PENDING_LIMIT", "1800")))

A100 = Machine(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)

primary = WorkerPool(
    machine=A100,
    container=Container(
        image_uri=PS_TRAINER_IMAGE,
        args=(
            "--rows=1200",
            "--epochs=3",
            "--batch_size=64",
            "--learning_rate=0.5",
            "--resume",  # a Spot restart or the next rung continues from the last checkpoint
        ),
    ),
)

SPEC = DistributedTrainingJob(
    display_name="weekly-{{data_interval_end|ds_nodash}}",
    primary=primary,
    workers=WorkerPool.like(primary, replica_count=1),
    base_output_directory=OUTPUT_URI,
    # the checkpoint contract: the trainer resumes from the newest ckpt-<step>.json in AIP_CHECKPOINT_DIR
    checkpoints=Checkpoints(match_glob="ckpt-*.json"),
    scheduling=Scheduling(timeout=timedelta(hours=4)),
    labels={"example": "persistent-ladder"},
)

RESERVED = PersistentResource(
    resource_id=RESOURCE_ID,
    display_name="weekly retraining",
    pools=(ResourcePool(machine=A100, replica_count=4),),  # two jobs of 2 replicas at once
)

LADDER = CapacityLadder(
    rungs=(
        Rung(
            name="reserved",
            persistent_resource=PersistentResourceUse(
                resource=RESERVED, ensure=True, idle_timeout=IDLE_TIMEOUT
            ),
            pending_limit=PENDING_LIMIT,
        ),
        Rung(name="on-demand", pending_limit=PENDING_LIMIT),
        Rung(name="spot", strategy="SPOT", retries=2, retry_backoff=timedelta(minutes=2)),
    ),
)

with DAG(
    DAG_ID,
    schedule="@weekly",
    start_date=datetime(2026, 1, 4, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=2,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=2)},
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
        execution_timeout=timedelta(hours=6),
    )

with DAG(
    SWEEP_DAG_ID,
    schedule="@hourly",
    start_date=datetime(2026, 1, 4, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["vertex-dist", "example", "capacity"],
    doc_md="Delete the persistent resources this provider ensured once idle past their idle timeout.",
) as sweep_dag:
    VertexSweepPersistentResourcesOperator(task_id="sweep", vertex_dist_conn_id=CONN_ID)
