"""Weekly retraining on the week that just ended: snapshot the week's data, train on it on Vertex AI.

Each run works on its own data interval, whenever it actually runs (late, retried or backfilled):

- ``snapshot_week`` writes the week's rows to ``<bucket>/retraining/data/<start>-<end>/``;
- ``train`` runs the parameter-server trainer on a primary and two workers, with the week in its
  args (``--data-dir``) and in its output directory ``<bucket>/retraining/models/<start>-<end>/``
  (so ``AIP_MODEL_DIR`` is ``.../<start>-<end>/model/``).

Catch-up safe: ``catchup=False`` (a paused DAG does not wake up to a pile of weeks: use
``airflow backfill create`` for that) and ``max_active_runs=1``. A retry of ``train`` re-attaches to
the job of its run (found by its labels) instead of submitting a second one.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from airflow.sdk import DAG, CronDataIntervalTimetable, task
from examples_common import BUCKET, CONN_ID, POLL_INTERVAL, PS_TRAINER_IMAGE, join, writable_dir

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, Scheduling, WorkerPool

DAG_ID = "vertex_dist_retraining"
ROOT = join(BUCKET, "retraining")
#: ``<start>-<end>`` of the run's data interval (no spaces: it goes into URIs).
WEEK = "{{data_interval_start|ds_nodash}}-{{data_interval_end|ds_nodash}}"
DATA_URI = join(ROOT, "data", WEEK)
OUTPUT_URI = join(ROOT, "models", WEEK)
#: rows of synthetic data a snapshot holds (the example's stand-in for a warehouse export).
ROWS = 1200

primary = WorkerPool(
    machine=Machine(machine_type="n1-standard-4"),
    container=Container(
        image_uri=PS_TRAINER_IMAGE,
        args=(
            f"--data-dir={DATA_URI}",
            "--epochs=3",
            "--batch_size=64",
            "--learning_rate=0.5",
            "--metric-id=accuracy",
        ),
    ),
)

SPEC = DistributedTrainingJob(
    display_name="retrain-{{data_interval_end|ds_nodash}}",
    primary=primary,
    workers=WorkerPool.like(primary, replica_count=2),
    base_output_directory=OUTPUT_URI,
    scheduling=Scheduling(timeout=timedelta(hours=4)),
    labels={"example": "retraining"},
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
    # A data-interval timetable: each run covers [previous Sunday, this Sunday). (A bare "@weekly"
    # gives zero-length intervals on Airflow 3 unless [scheduler] create_cron_data_intervals is set.)
    schedule=CronDataIntervalTimetable("@weekly", timezone="UTC"),
    start_date=datetime(2026, 1, 4, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=2)},
    tags=["vertex-dist", "example"],
    doc_md=__doc__,
) as dag:
    train = VertexTrainingOperator(
        task_id="train",
        spec=SPEC,
        vertex_dist_conn_id=CONN_ID,
        deferrable=True,  # wait in the triggerer, not in a worker slot
        poll_interval=POLL_INTERVAL,
        execution_timeout=timedelta(hours=5),  # also cancels the job
    )
    snapshot_week() >> train
