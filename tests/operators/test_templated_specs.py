"""A spec model holding Jinja, run for real: its templated fields are rendered by the task and judged
then, by the same rules, naming the field."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from vertex_emulator.app import Emulator

from .harness import dag_xcom, logged, register_dag, run_dag, ti_state
from .test_training import jobs, spec

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
WHEN = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)


def test_a_model_with_jinja_labels_renders_in_a_dag_run(vertex_conn: Emulator) -> None:
    model = spec(
        "pass",
        name="train-{{ ds_nodash }}",
        labels={"day": "{{ ds_nodash }}", "team": "ml"},
        base_output_directory="gs://{{ params.bucket }}/runs/{{ ds }}",
    )
    with DAG("model_jinja_labels", schedule=None, start_date=START, params={"bucket": "b"}) as dag:
        VertexTrainingOperator(task_id="train", spec=model, deferrable=False, poll_interval=0.3)
    dr = run_dag(dag, logical_date=WHEN)
    assert ti_state(dr, "train") == "success"
    [job] = jobs(vertex_conn)
    assert job["displayName"] == "train-20260304"
    assert job["labels"]["day"] == "20260304" and job["labels"]["team"] == "ml"
    assert job["jobSpec"]["baseOutputDirectory"] == {"outputUriPrefix": "gs://b/runs/2026-03-04"}
    assert dag_xcom(dr, "train")["display_name"] == "train-20260304"


def test_a_jinja_label_rendering_to_a_bad_value_fails_naming_it(vertex_conn: Emulator, capfd: Any) -> None:
    model = spec("pass", labels={"day": "{{ ts }}"})  # 2026-03-04T05:06:07+00:00: ':' and '+' are refused
    with DAG("model_jinja_bad_label", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=model, deferrable=False)
    dr = run_dag(dag, logical_date=WHEN)
    assert ti_state(dr, "train") == "failed"
    log = logged(capfd)
    assert "invalid DistributedTrainingJob spec after rendering:" in log
    assert (
        "spec.labels.day: label value '2026-03-04T05:06:07+00:00' may contain only lowercase letters, "
        "numbers, '_' and '-'" in log
    )
    assert jobs(vertex_conn) == []  # nothing was created


def test_a_run_without_a_logical_date_names_the_field_needing_one(vertex_conn: Emulator, capfd: Any) -> None:
    """Airflow 3 runs a manual DAG run without a logical date: ``ds`` and friends are not set."""
    with DAG("no_logical_date", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=spec("pass", labels={"day": "{{ ds_nodash }}"}))
        VertexTrainingOperator(  # what the message advises instead
            task_id="advised",
            spec=spec("pass", labels={"day": "{{ dag_run.run_after | ds_nodash }}"}),
            poll_interval=0.3,
        )
    register_dag(dag)
    dr = dag.test(logical_date=None, run_after=WHEN)
    assert dr.logical_date is None
    assert ti_state(dr, "train") == "failed"
    log = logged(capfd)
    assert (
        "cannot render field 'spec' of task 'train':\n"
        "  spec.labels.day: '{{ ds_nodash }}': 'ds_nodash' is undefined: this run has no logical date"
    ) in log
    assert ti_state(dr, "advised") == "success"
    [job] = jobs(vertex_conn)
    assert job["labels"]["day"] == "20260304"
