"""The Reduction Server layout of Vertex AI's distributed-training page, with a PyTorch DDP trainer.

Pools (``[primary, workers, reducers]``):

- primary: 1 x ``n1-highmem-96`` with 8 x ``NVIDIA_TESLA_V100``;
- workers: 4 more of the same (``WorkerPool.like``);
- Reduction Server: ``replica_count="auto"`` sizes the reducers from the egress bandwidth of pools 0
  and 1: 5 x 100 Gbps = 500 Gbps needs 16 x ``n1-highcpu-16`` at 32 Gbps each (512 Gbps). The
  reducers get no accelerators and run Google's reduction-server image of the job's region.

Every trainer replica runs ``trainers.ddp_trainer``: rank and world size come from CLUSTER_SPEC
(primary = rank 0, hosting the rendezvous), gradients are bucketed with ``bucket_cap_mb=64`` (the
Reduction Server guidance: fewer, larger messages). On Vertex AI the image needs NCCL >= 2.7 and
Google's reduction-server NCCL plugin (the PyTorch prebuilt GPU images have both); the reducers then
carry the all-reduce. On the emulator the trainers use gloo on the CPU and the 16 reducers are idle
placeholder processes: the layout, the addresses and the environment are what Vertex AI gives.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from airflow.sdk import DAG
from examples_common import BUCKET, CONN_ID, DDP_TRAINER_IMAGE, POLL_INTERVAL, join

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import (
    Container,
    DistributedTrainingJob,
    Machine,
    ReductionServer,
    Scheduling,
    WorkerPool,
)

DAG_ID = "vertex_dist_reduction_server"

primary = WorkerPool(
    machine=Machine(machine_type="n1-highmem-96", accelerator_type="NVIDIA_TESLA_V100", accelerator_count=8),
    container=Container(
        image_uri=DDP_TRAINER_IMAGE,
        args=("--epochs=2", "--batch_size=32", "--rows=1500", "--bucket-cap-mb=64", "--threads=1"),
    ),
)

SPEC = DistributedTrainingJob(
    display_name="ddp-reduction-server-{{ds_nodash}}",
    primary=primary,
    workers=WorkerPool.like(primary, replica_count=4),
    reduction_server=ReductionServer(replica_count="auto", machine_type="n1-highcpu-16"),
    base_output_directory=join(BUCKET, "reduction_server", "{{ds_nodash}}"),
    scheduling=Scheduling(timeout=timedelta(hours=8)),
    labels={"example": "reduction-server"},
)

with DAG(
    DAG_ID,
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    tags=["vertex-dist", "example"],
    doc_md=__doc__,
) as dag:
    VertexTrainingOperator(
        task_id="train",
        spec=SPEC,
        vertex_dist_conn_id=CONN_ID,
        deferrable=True,
        poll_interval=POLL_INTERVAL,
        execution_timeout=timedelta(hours=9),
    )
