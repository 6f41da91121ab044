"""One model per customer segment, trained side by side with a mapped task, and the best one picked.

- ``prepare`` (mapped over ``SEGMENTS``) writes each segment's rows to
  ``<bucket>/per_segment/data/<segment>/<day>/``;
- ``train`` is ``VertexTrainingOperator.partial(...).expand(spec=[...])``: one Vertex AI job per
  segment, each with its own spec (its data, its output directory
  ``<bucket>/per_segment/models/<segment>/<day>/``), its own run labels and its own XCom. Jinja in a
  mapped spec (``{{ ds_nodash }}``) is rendered per instance and the result validated again; a retry of
  one instance re-attaches to that instance's job;
- ``pick_best`` reads every segment's ``metrics.json`` and returns the segment with the highest
  accuracy, its job and its model's location.

Each mapped spec here is a ``DistributedTrainingJob``'s JSON dict (``model_dump(mode="json")``); a
spec model works as well.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from airflow.sdk import DAG, task
from examples_common import BUCKET, CONN_ID, POLL_INTERVAL, PS_TRAINER_IMAGE, join, read_text, writable_dir

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

DAG_ID = "vertex_dist_per_segment"
ROOT = join(BUCKET, "per_segment")
DAY = "{{ ds_nodash }}"
#: Segment name -> how noisy its synthetic data is (the example's stand-in for real differences).
SEGMENTS = {"north": 0.2, "south": 0.8, "west": 1.6}
ROWS = 800


def data_uri(segment: str, day: str = DAY) -> str:
    return join(ROOT, "data", segment, day)


def output_uri(segment: str, day: str = DAY) -> str:
    return join(ROOT, "models", segment, day)


def segment_spec(segment: str) -> dict[str, Any]:
    """The training job of one segment, as the JSON dict the mapped task is expanded over."""
    spec = DistributedTrainingJob(
        display_name=f"segment-{segment}-{DAY}",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(
                image_uri=PS_TRAINER_IMAGE,
                args=(f"--data-dir={data_uri(segment)}", "--epochs=3", "--metric-id=accuracy"),
            ),
        ),
        base_output_directory=output_uri(segment),
        labels={"example": "per-segment", "segment": segment},
    )
    return spec.model_dump(mode="json", exclude_unset=True)


@task
def prepare(segment: str, ds_nodash: str | None = None) -> dict[str, Any]:
    """Write one segment's rows (train/eval CSV + manifest) where its training job reads them."""
    from trainers.prep import prepare as write_rows

    uri = data_uri(segment, str(ds_nodash))
    with writable_dir(uri) as out:
        manifest = write_rows(out, rows=ROWS, seed=7, noise=SEGMENTS[segment], segment=segment)
    return {"segment": segment, "uri": uri, **manifest}


@task
def pick_best(jobs: list[dict[str, Any]], ds_nodash: str | None = None) -> dict[str, Any]:
    """The segment whose model scored the highest accuracy (``jobs``: the mapped task's XComs, in
    map-index order, so in ``SEGMENTS`` order)."""
    import json

    scores = []
    for segment, job in zip(SEGMENTS, jobs, strict=True):
        model_uri = join(output_uri(segment, str(ds_nodash)), "model")
        metrics = json.loads(read_text(join(model_uri, "metrics.json")))
        scores.append(
            {"segment": segment, "accuracy": metrics["accuracy"], "job": job["name"], "model_uri": model_uri}
        )
    best = max(scores, key=lambda row: row["accuracy"])
    return {**best, "scores": {row["segment"]: row["accuracy"] for row in scores}}


with DAG(
    DAG_ID,
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    tags=["vertex-dist", "example"],
    doc_md=__doc__,
) as dag:
    prepared = prepare.expand(segment=list(SEGMENTS))
    train = VertexTrainingOperator.partial(
        task_id="train",
        vertex_dist_conn_id=CONN_ID,
        deferrable=True,
        poll_interval=POLL_INTERVAL,
        retries=2,
    ).expand(spec=[segment_spec(segment) for segment in SEGMENTS])
    prepared >> train
    pick_best(train.output)
