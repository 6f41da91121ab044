"""Data prep -> training, chained by an Asset: the training DAG runs when a new dataset lands.

- ``vertex_dist_data_prep`` (daily) writes the day's dataset to ``<bucket>/prep_to_train/datasets/<day>/``
  -- where the training job reads it -- and emits an event on the ``DATASET`` Asset whose
  ``extra`` says which version it wrote (``uri``, ``version``, row counts).
- ``vertex_dist_train_on_prep`` is scheduled on that Asset. ``latest_dataset`` reads the version from
  the event that triggered the run (or, for a manual run, from the Asset's latest event), and
  ``train`` runs a primary and a worker on it with ``--data-dir=<that uri>``, writing the model to
  ``<bucket>/prep_to_train/models/<version>/`` (``AIP_MODEL_DIR`` is ``.../<version>/model/``).

The prep task runs in Airflow, not on Vertex AI: it writes ``gs://`` through ``GCS_MOUNT_ROOT`` when
set (the emulator's gs:// directory, or a Cloud Storage FUSE mount) and with the Cloud Storage client
otherwise (see examples_common).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from airflow.sdk import DAG, Asset, task
from examples_common import BUCKET, CONN_ID, POLL_INTERVAL, PS_TRAINER_IMAGE, join, writable_dir

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, Scheduling, WorkerPool

PREP_DAG_ID = "vertex_dist_data_prep"
TRAIN_DAG_ID = "vertex_dist_train_on_prep"
ROOT = join(BUCKET, "prep_to_train")
#: The datasets the prep DAG produces; every version is a directory below this URI.
DATASET = Asset(name="vertex_dist_example_dataset", uri=join(ROOT, "datasets"))
ROWS = 1000

# -- data prep --------------------------------------------------------------------------------------


@task(outlets=[DATASET])
def prepare_dataset(ds_nodash: Any = None, outlet_events: Any = None) -> dict[str, Any]:
    """Write the day's dataset (train/eval CSV + ``dataset.json``) and announce it on the Asset."""
    from trainers.prep import prepare

    uri = join(DATASET.uri, ds_nodash)
    with writable_dir(uri) as out:
        manifest = prepare(out, rows=ROWS, seed=int(ds_nodash))
    event = {
        "uri": uri,
        "version": ds_nodash,
        "train_rows": manifest["train_rows"],
        "eval_rows": manifest["eval_rows"],
    }
    outlet_events[DATASET].extra = event
    return event


with DAG(
    PREP_DAG_ID,
    schedule="@daily",
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["vertex-dist", "example"],
    doc_md=__doc__,
) as prep_dag:
    prepare_dataset()

# -- training on the dataset ------------------------------------------------------------------------


@task(inlets=[DATASET])
def latest_dataset(triggering_asset_events: Any = None, inlet_events: Any = None) -> dict[str, Any]:
    """The dataset version to train on: the triggering event's, else the Asset's latest event's."""
    events = list((triggering_asset_events or {}).get(DATASET, ()))
    if not events:
        events = list(inlet_events[DATASET])
    if not events:
        raise ValueError(f"{DATASET.uri}: no dataset event yet: run {PREP_DAG_ID} first")
    extra = dict(events[-1].extra or {})
    if not str(extra.get("uri", "")).startswith(DATASET.uri + "/") or not extra.get("version"):
        raise ValueError(f"asset event extra: needs 'uri' under {DATASET.uri}/ and 'version' (got {extra!r})")
    return extra


DATA_FROM_XCOM = "{{ti.xcom_pull(task_ids='latest_dataset')['uri']}}"
VERSION_FROM_XCOM = "{{ti.xcom_pull(task_ids='latest_dataset')['version']}}"

primary = WorkerPool(
    machine=Machine(machine_type="n1-standard-4"),
    container=Container(
        image_uri=PS_TRAINER_IMAGE,
        args=(f"--data-dir={DATA_FROM_XCOM}", "--epochs=3", "--batch_size=50", "--learning_rate=0.5"),
    ),
)
SPEC = DistributedTrainingJob(
    display_name=f"train-on-{VERSION_FROM_XCOM}",
    primary=primary,
    workers=WorkerPool.like(primary, replica_count=1),
    base_output_directory=join(ROOT, "models", VERSION_FROM_XCOM),
    scheduling=Scheduling(timeout=timedelta(hours=2)),
    labels={"example": "prep-to-train"},
)

with DAG(
    TRAIN_DAG_ID,
    schedule=DATASET,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["vertex-dist", "example"],
    doc_md=__doc__,
) as train_dag:
    latest_dataset() >> VertexTrainingOperator(
        task_id="train",
        spec=SPEC,
        vertex_dist_conn_id=CONN_ID,
        deferrable=True,
        poll_interval=POLL_INTERVAL,
        execution_timeout=timedelta(hours=3),
    )
