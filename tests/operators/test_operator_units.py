"""The operators' parse-time checks, spec rendering and verdicts: no Airflow run, no emulator."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.job import job_verdict
from airflow_vertex_dist.operators.spec_field import SpecError
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import DistributedTrainingJob

from .test_training import PARENT, spec

START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def test_spec_is_validated_at_parse_time_when_it_has_no_jinja() -> None:
    bad = spec("pass").model_dump(mode="json")
    bad["primary"]["replica_count"] = 2
    with pytest.raises(SpecError, match=r"spec\.primary\.replica_count: worker pool 0 holds exactly 1"):
        VertexTrainingOperator(task_id="t", spec=bad)
    with pytest.raises(ValueError, match="if_exists: must be one of reattach, fail, recreate"):
        VertexTrainingOperator(task_id="t", spec=spec("pass"), if_exists="replace")  # type: ignore[arg-type]


def test_jinja_is_rendered_then_the_spec_is_validated_again() -> None:
    raw = spec("pass").model_dump(mode="json")
    raw["display_name"] = "train-{{ ds }}"
    raw["base_output_directory"] = "{{ params.out }}"
    with DAG("render", schedule=None, start_date=START, params={"out": "not-a-bucket"}):
        op = VertexTrainingOperator(task_id="t", spec=raw)
    assert op.spec == raw  # not validated yet: it has templates
    with pytest.raises(SpecError, match=r"after rendering:\n  spec\.base_output_directory: must be a Cloud"):
        op.render_template_fields({"ds": "2024-01-02", "params": {"out": "not-a-bucket"}})  # type: ignore[arg-type]
    op.spec = raw
    op.render_template_fields({"ds": "2024-01-02", "params": {"out": "gs://b/runs/2024"}})  # type: ignore[arg-type]
    assert isinstance(op.validated_spec, DistributedTrainingJob)
    assert op.validated_spec.display_name == "train-2024-01-02"
    assert op.validated_spec.base_output_directory == "gs://b/runs/2024"
    assert op.spec == op.validated_spec.model_dump(mode="json")  # JSON, for the rendered-fields view


def test_job_verdict_messages_match_the_trigger() -> None:
    name = f"{PARENT}/customJobs/1"
    failed = {"name": name, "state": "JOB_STATE_FAILED", "error": {"code": 3, "message": "exit 3"}}
    assert job_verdict(failed) == (False, f"job {name} failed: exit 3")
    assert job_verdict({"name": name, "state": "JOB_STATE_EXPIRED"}) == (
        False,
        f"job {name} expired before it could run",
    )
    partial = {"name": name, "state": "JOB_STATE_PARTIALLY_SUCCEEDED"}
    assert job_verdict(partial, partial_success="succeed") == (
        True,
        f"job {name} PARTIALLY_SUCCEEDED (accepted: partial_success='succeed')",
    )
    assert job_verdict(partial) == (
        False,
        f"job {name} PARTIALLY_SUCCEEDED (a failure: partial_success='fail')",
    )
    paused = {"name": name, "state": "JOB_STATE_PAUSED"}
    assert job_verdict(paused, paused_for_s=5, paused_grace_s=10) is None
    assert job_verdict(paused, paused_for_s=10, paused_grace_s=10) == (
        False,
        f"job {name} stayed PAUSED for 10s (grace 10s)",
    )
    assert job_verdict({"name": name, "state": "JOB_STATE_RUNNING"}) is None


def test_a_template_that_fails_names_the_field_and_the_spec_path() -> None:
    raw = spec("pass").model_dump(mode="json")
    raw["labels"] = {"day": "{{ ds_nodash }}"}
    with DAG("render_errors", schedule=None, start_date=START):
        op = VertexTrainingOperator(task_id="train", spec=raw)
    # a run without a logical date (Airflow 3: a manual run triggered without one) has no ds_nodash
    with pytest.raises(SpecError) as info:
        op.render_template_fields({"run_id": "manual__2026-03-04", "params": {}})
    assert str(info.value) == (
        "cannot render field 'spec' of task 'train':\n"
        "  spec.labels.day: '{{ ds_nodash }}': 'ds_nodash' is undefined: this run has no logical date (a "
        "manual run triggered without one), so ds, ds_nodash, ts, logical_date and data_interval_start/end "
        "are not set; trigger it with a logical date, or use {{ dag_run.run_after | ds_nodash }} or "
        "{{ run_id }}"
    )
    when = datetime(2026, 3, 4, tzinfo=timezone.utc)
    dated = {"logical_date": when, "ds_nodash": "20260304", "params": {}}
    raw["primary"]["container"]["args"] = ["--ok", "{{ params.nope }}"]
    op.spec = raw
    with pytest.raises(SpecError) as info:  # an undefined name in a dated run: no word of logical dates
        op.render_template_fields(dated)  # type: ignore[arg-type]
    assert str(info.value) == (
        "cannot render field 'spec' of task 'train':\n"
        "  spec.primary.container.args[1]: '{{ params.nope }}': 'dict object' has no attribute 'nope'"
    )
    raw["primary"]["container"]["args"] = ["--ok", "{{ ds "]
    op.spec = raw
    with pytest.raises(
        SpecError, match=r"  spec\.primary\.container\.args\[1\]: '\{\{ ds ': TemplateSyntaxError: "
    ):
        op.render_template_fields(dated)  # type: ignore[arg-type]
    raw["primary"]["container"]["args"] = ["--day={{ ds_nodash }}"]
    op.spec = raw
    op.render_template_fields(dated)  # type: ignore[arg-type]
    assert op.validated_spec.labels == {"day": "20260304"}
    assert op.validated_spec.primary.container.args == ("--day=20260304",)
