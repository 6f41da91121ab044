"""Spec models take Jinja in the string fields an operator renders (labels, display names, the output
directory, the image, package URIs, the service account): those fields are judged once rendered; every
other rule, and those fields without Jinja, still apply when the model is built."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_vertex_dist.operators.spec_field import SpecError, coerce_spec
from airflow_vertex_dist.specs import (
    Container,
    DistributedTrainingJob,
    HyperparameterTuningJob,
    IntegerParameter,
    Machine,
    Metric,
    PythonPackage,
    SpecValidationError,
    Study,
    WorkerPool,
)

PRIMARY = WorkerPool(
    machine=Machine(machine_type="n1-standard-4"), container=Container(image_uri="python:3.11", args=("--x",))
)


def job(**fields: Any) -> DistributedTrainingJob:
    return DistributedTrainingJob(**{"display_name": "train", "primary": PRIMARY, **fields})


def test_a_model_takes_jinja_where_a_templated_value_is_reasonable() -> None:
    spec = job(
        display_name="train-{{ ds_nodash }}-" + "x" * 130,  # over 128 only before rendering
        labels={"day": "{{ ds_nodash }}", "team": "ml"},
        base_output_directory="gs://{{ var.value.bucket }}/runs/{{ ds }}",
        service_account="{{ var.value.trainer_sa }}",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(
                image_uri="{{ var.value.image }}", args=("--day={{ ds }}",), env={"DAY": "{{ ds }}"}
            ),
        ),
    )
    assert spec.labels["day"] == "{{ ds_nodash }}"
    assert spec.to_api()["jobSpec"]["baseOutputDirectory"] == {
        "outputUriPrefix": "gs://{{ var.value.bucket }}/runs/{{ ds }}"
    }
    package = PythonPackage(
        executor_image_uri="us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest",
        package_uris=("{{ var.value.package_uri }}",),
        python_module="trainer.task",
    )
    assert package.package_uris == ("{{ var.value.package_uri }}",)
    tuning = HyperparameterTuningJob(
        display_name="tune-{{ ds_nodash }}",
        trial_job=job(),
        study=Study(
            metrics=(Metric(metric_id="loss", goal="MINIMIZE"),),
            parameters=(IntegerParameter(parameter_id="x", min_value=1, max_value=4),),
        ),
        max_trial_count=4,
        labels={"day": "{{ ds_nodash }}"},
    )
    assert tuning.labels == {"day": "{{ ds_nodash }}"}


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"labels": {"day": "Monday"}}, "labels.day: label value 'Monday' may contain only lowercase"),
        ({"labels": {"{{ key }}": "x"}}, "labels: label key '{{ key }}' must start with a lowercase letter"),
        ({"base_output_directory": "bucket/out"}, "base_output_directory: must be a Cloud Storage URI"),
        ({"service_account": "trainer"}, "service_account: must be a service account e-mail address"),
        ({"display_name": "x" * 129}, "display_name: at most 128 characters (got 129)"),
    ],
)
def test_without_jinja_the_rules_apply_when_the_model_is_built(fields: dict[str, Any], error: str) -> None:
    with pytest.raises(SpecValidationError) as info:
        job(**fields)
    assert error in str(info.value)


def test_a_rule_not_about_the_templated_field_still_applies_at_build_time() -> None:
    with pytest.raises(SpecValidationError, match=r"primary\.replica_count: worker pool 0 holds exactly 1"):
        job(labels={"day": "{{ ds_nodash }}"}, primary=WorkerPool.like(PRIMARY, replica_count=2))


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (
            {"labels": {"day": "{{ ds }}"}},
            "spec.labels.day: label value '2024-01-02 x' may contain only lowercase letters, numbers, '_' "
            "and '-' (got ' ')",
        ),
        ({"base_output_directory": "{{ ds }}"}, "spec.base_output_directory: must be a Cloud Storage URI"),
        ({"service_account": "{{ ds }}"}, "spec.service_account: must be a service account e-mail address"),
    ],
)
def test_the_rendered_value_is_judged_and_named(fields: dict[str, Any], error: str) -> None:
    """What the operator does after rendering: the same model, every rule, the field's path."""
    raw = job(**fields).model_dump(mode="json")
    rendered = _render(raw, "2024-01-02 x")
    with pytest.raises(SpecError) as info:
        coerce_spec(rendered, DistributedTrainingJob, when=" after rendering", rendered=True)
    assert str(info.value).startswith("invalid DistributedTrainingJob spec after rendering:")
    assert error in str(info.value)
    # a value still holding Jinja after rendering is judged too, not deferred again
    with pytest.raises(SpecError, match=r"spec\.labels\.day: label value"):
        coerce_spec(job(labels={"day": "{{ x }}"}), DistributedTrainingJob, rendered=True)


def _render(value: Any, ds: str) -> Any:
    if isinstance(value, str):
        return value.replace("{{ ds }}", ds)
    if isinstance(value, dict):
        return {k: _render(v, ds) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, ds) for v in value]
    return value
