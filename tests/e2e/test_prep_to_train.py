"""``dags/prep_to_train.py`` end to end: the prep DAG writes a dataset and emits the Asset event that
queues the training DAG; the training DAG's job reads that dataset version and writes its model."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from operators.harness import dag_xcom, register_dag, run_dag, ti_state

from vertex_emulator.app import Emulator

pytestmark = pytest.mark.slow

PARENT = "projects/test-project/locations/us-central1"
ROOT = "gs://vertex-dist-examples/prep_to_train"


def test_prep_emits_the_dataset_and_training_reads_it(examples: Emulator, load_dags: Any) -> None:
    from airflow.models.asset import AssetDagRunQueue, AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    dags = load_dags("prep_to_train.py")
    prep, train = dags["vertex_dist_data_prep"], dags["vertex_dist_train_on_prep"]
    register_dag(train)  # the consumer is known before the producer runs, as in a deployment

    dr = run_dag(prep, logical_date=datetime(2026, 11, 20, tzinfo=timezone.utc))
    assert ti_state(dr, "prepare_dataset") == "success"
    event = dag_xcom(dr, "prepare_dataset")
    assert event["uri"] == f"{ROOT}/datasets/20261120" and event["version"] == "20261120"
    local_root = examples.config.gcs_root / "vertex-dist-examples" / "prep_to_train"
    data_dir = local_root / "datasets" / "20261120"
    manifest = json.loads((data_dir / "dataset.json").read_text())
    assert manifest["train_rows"] + manifest["eval_rows"] == 1000 == event["train_rows"] + event["eval_rows"]

    with create_session() as session:
        asset = session.scalar(select(AssetModel).where(AssetModel.uri == f"{ROOT}/datasets"))
        assert asset is not None
        [row] = session.scalars(select(AssetEvent).where(AssetEvent.asset_id == asset.id)).all()
        assert row.extra == event
        queued = session.scalars(select(AssetDagRunQueue.target_dag_id)).all()
        assert queued == ["vertex_dist_train_on_prep"]  # the scheduler would start the training run

    tr = run_dag(train, logical_date=datetime(2026, 11, 20, 6, tzinfo=timezone.utc))
    assert ti_state(tr, "latest_dataset") == "success"
    assert ti_state(tr, "train") == "success"
    assert dag_xcom(tr, "latest_dataset") == event

    [job] = examples.store.list("customJobs", PARENT)
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    assert job["displayName"] == "train-on-20261120"
    args = job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"]
    assert f"--data-dir={ROOT}/datasets/20261120" in args
    assert job["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"] == f"{ROOT}/models/20261120"
    model_dir = local_root / "models" / "20261120" / "model"
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["train_rows"] == manifest["train_rows"]  # it trained on the prepared files
    assert metrics["eval_rows"] == manifest["eval_rows"]
    assert json.loads((model_dir / "model.json").read_text())["cluster"]["trainers"] == 2
