"""Training on a TPU VM: a TPU v6e single-host slice (``ct6e-standard-8t``, topology ``2x4``: 8 chips on
one VM), its model's metrics read back.

The spec names the machine type and its topology (``Machine(tpu_topology=...)``) and no accelerator:
the v1 ``AcceleratorType`` has no value for TPU v6e. The machine type and the topologies it takes come
from the machine catalog, derived from the TPU tables of Google's "Configure compute resources" page
(``catalog/configure_compute_page.json``):
a topology the tables do not give the machine type (``4x4`` on ``ct6e-standard-8t``) fails when the DAG
file is parsed.

On Vertex AI the replica runs on the TPU VM; on the emulator it runs on this machine, as every replica
does (a process; no TPU: the trainer here is the CPU-only parameter-server trainer, alone in its job).

Tasks: ``train`` submits the job and waits for it; ``report`` reads the model's metrics back.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow.sdk import DAG, task
from examples_common import BUCKET, CONN_ID, POLL_INTERVAL, PS_TRAINER_IMAGE, join, read_text

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, Scheduling, WorkerPool

DAG_ID = "vertex_dist_tpu_training"
OUTPUT = join(BUCKET, "tpu_training", "{{ds_nodash}}")

SPEC = DistributedTrainingJob(
    display_name="tpu-v6e-{{ds_nodash}}",
    primary=WorkerPool(
        machine=Machine(machine_type="ct6e-standard-8t", tpu_topology="2x4"),
        container=Container(
            image_uri=PS_TRAINER_IMAGE,
            args=("--epochs=2", "--batch_size=32", "--rows=600", "--learning_rate=0.5"),
        ),
    ),
    base_output_directory=OUTPUT,
    scheduling=Scheduling(timeout=timedelta(hours=2)),
    labels={"example": "tpu-training"},
)


@task
def report(ds_nodash: Any = None) -> dict[str, Any]:
    """The trained model's metrics, as the primary wrote them."""
    metrics: dict[str, Any] = json.loads(
        read_text(join(BUCKET, "tpu_training", ds_nodash, "model", "metrics.json"))
    )
    return {k: metrics.get(k) for k in ("accuracy", "log_loss", "steps")}


with DAG(
    DAG_ID,
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    tags=["vertex-dist", "example"],
    doc_md=__doc__,
) as dag:
    train = VertexTrainingOperator(
        task_id="train",
        spec=SPEC,
        vertex_dist_conn_id=CONN_ID,
        poll_interval=POLL_INTERVAL,
    )
    train >> report()
