"""A parameter-server job: primary + workers + parameter servers + an evaluator, watched replica by
replica.

Pools (``[primary, workers, parameter servers, evaluator]``), all running ``trainers.ps_trainer``,
each replica taking its role from CLUSTER_SPEC:

- the parameter servers (pool 2) hold the weights, a shard each, and apply the trainers' gradients;
- the primary (pool 0) and the workers (pool 1) compute gradients on their shard of the rows and
  exchange them with the servers over TCP at their CLUSTER_SPEC addresses (synchronous SGD);
- the evaluator (pool 3) scores every checkpoint the primary writes to ``AIP_CHECKPOINT_DIR``;
- the primary writes ``model.json`` and ``metrics.json`` (with the evaluator's score) to
  ``AIP_MODEL_DIR``.

Tasks: ``train`` submits the job and returns (``wait_for_completion=False``); ``replicas_up`` waits
until every replica of every pool is up (read from ``webAccessUris``: the job enables web access);
``finished`` waits for the job to succeed; ``report`` reads the model's metrics back.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow.sdk import DAG, task
from examples_common import BUCKET, CONN_ID, POLL_INTERVAL, PS_TRAINER_IMAGE, join, read_text

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.sensors.jobs import VertexJobSensor, VertexReplicaSensor
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, Scheduling, WorkerPool

DAG_ID = "vertex_dist_parameter_server"
OUTPUT = join(BUCKET, "parameter_server", "{{ds_nodash}}")
ARGS = ("--epochs=4", "--batch_size=32", "--rows=1500", "--learning_rate=0.5")


def pool(machine_type: str, replicas: int = 1) -> WorkerPool:
    return WorkerPool(
        machine=Machine(machine_type=machine_type),
        replica_count=replicas,
        container=Container(image_uri=PS_TRAINER_IMAGE, args=ARGS),
    )


SPEC = DistributedTrainingJob(
    display_name="ps-{{ds_nodash}}",
    primary=pool("n1-standard-8"),
    workers=pool("n1-standard-8", 2),
    parameter_servers=pool("n1-highmem-8", 2),
    evaluators=pool("n1-standard-4"),
    base_output_directory=OUTPUT,
    enable_web_access=True,
    scheduling=Scheduling(timeout=timedelta(hours=4)),
    labels={"example": "parameter-server"},
)

JOB_NAME = "{{ ti.xcom_pull(task_ids='train')['name'] }}"


@task
def report(ds_nodash: Any = None) -> dict[str, Any]:
    """The trained model's metrics, as the primary wrote them (with the evaluator's last score)."""
    metrics: dict[str, Any] = json.loads(
        read_text(join(BUCKET, "parameter_server", ds_nodash, "model", "metrics.json"))
    )
    keep = ("accuracy", "log_loss", "steps", "train_rows", "eval_rows", "evaluator")
    return {k: metrics.get(k) for k in keep}


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
        wait_for_completion=False,
        poll_interval=POLL_INTERVAL,
    )
    replicas_up = VertexReplicaSensor(
        task_id="replicas_up",
        job_name=JOB_NAME,
        replicas=["workerpool0-0", "workerpool1-*", "workerpool2-*", "workerpool3-*"],
        vertex_dist_conn_id=CONN_ID,
        deferrable=True,
        poke_interval=POLL_INTERVAL,
        timeout=3600,
    )
    finished = VertexJobSensor(
        task_id="finished",
        job_name=JOB_NAME,
        vertex_dist_conn_id=CONN_ID,
        deferrable=True,
        poke_interval=POLL_INTERVAL,
        timeout=4 * 3600,
    )
    train >> replicas_up >> finished >> report()
