"""Training logs in the task log: a primary and two workers, one worker failing on bad data.

Every replica prints its steps; ``workerpool1-1`` then prints ``shard 7 of the training data is
corrupt`` with a traceback and exits 1 (``trainers.logs_demo``), failing the job. The ``train`` task
shows, prefixed by the replica key, the primary's lines and every replica's warnings and errors
(``stream_logs=True``, the default; ``"all"`` would add the workers' INFO lines), and its failure
message names ``workerpool1-1`` and quotes its last lines. The two DAGs differ only in where they
wait: in the triggerer (deferred) or in the worker slot.
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow.sdk import DAG
from examples_common import CONN_ID, POLL_INTERVAL
from trainers.local import LOGS_DEMO_IMAGE

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

FAILING_REPLICA = "workerpool1-1"


def pool(replicas: int) -> WorkerPool:
    return WorkerPool(
        machine=Machine(machine_type="n1-standard-4"),
        replica_count=replicas,
        container=Container(image_uri=LOGS_DEMO_IMAGE, args=(f"--fail_replica={FAILING_REPLICA}",)),
    )


SPEC = DistributedTrainingJob(
    display_name="training-logs-{{ds_nodash}}",
    primary=pool(1),
    workers=pool(2),
    labels={"example": "training-logs"},
)

for dag_id, deferrable in (("vertex_dist_training_logs", True), ("vertex_dist_training_logs_sync", False)):
    with DAG(
        dag_id,
        schedule=None,
        start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
        catchup=False,
        tags=["vertex-dist", "example"],
    ) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=SPEC,
            vertex_dist_conn_id=CONN_ID,
            deferrable=deferrable,
            poll_interval=POLL_INTERVAL,
            stream_logs=True,
            retries=0,
        )
    globals()[dag_id] = dag
