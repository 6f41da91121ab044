"""Every path a spec error can surface on gives the project's ``path: rule`` lines, and an unknown field
names the closest valid one: a model built in Python (keywords, ``model_validate``, JSON), a dict, a
YAML document, the CLI's ``render``, a dict with Jinja (its keys at parse time), and the rendered
spec. The emulator's Create answers with the same lines (``emulator/tests/test_api_rest_raw.py``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from airflow_vertex_dist.cli import main as cli_main
from airflow_vertex_dist.operators.spec_field import SpecError, check_keys, coerce_spec
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.operators.tuning import VertexTuningOperator
from airflow_vertex_dist.specs import (
    Container,
    DistributedTrainingJob,
    HyperparameterTuningJob,
    Machine,
    ReductionServer,
    SpecValidationError,
    WorkerPool,
)
from airflow_vertex_dist.specs.examples import PARAMETER_SERVER_EXAMPLE, TUNING_EXAMPLE

TRAINING = PARAMETER_SERVER_EXAMPLE.model_dump(mode="json", exclude_unset=True)
TUNING = TUNING_EXAMPLE.model_dump(mode="json")  # with each parameter's "type" tag


def _with(base: dict[str, Any], path: str, key: str, value: Any) -> dict[str, Any]:
    """``base`` with ``value`` set under ``key`` at ``path`` (dotted; ``[i]`` for list items)."""
    out = copy.deepcopy(base)
    node: Any = out
    for part in filter(None, path.replace("[", ".[").split(".")):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    node[key] = value
    return out


#: (case, model, bad dict, the expected line)
CASES = [
    (
        "top-level",
        DistributedTrainingJob,
        _with(TRAINING, "", "base_output_dir", "gs://b/x"),
        "spec.base_output_dir: unknown field (did you mean base_output_directory?)",
    ),
    (
        "nested",
        DistributedTrainingJob,
        _with(TRAINING, "primary.machine", "acelerator_count", 1),
        "spec.primary.machine.acelerator_count: unknown field (did you mean accelerator_count?)",
    ),
    (
        "in a list, through a discriminated union",
        HyperparameterTuningJob,
        _with(TUNING, "study.parameters[0]", "min_valu", 0.1),
        "spec.study.parameters[0].min_valu: unknown field (did you mean min_value?)",
    ),
    (
        "nothing close",
        DistributedTrainingJob,
        _with(TRAINING, "", "zzz", 1),
        "spec.zzz: unknown field (known: display_name, ",
    ),
]
IDS = [case[0] for case in CASES]


@pytest.mark.parametrize(("case", "model", "bad", "line"), CASES, ids=IDS)
def test_a_dict(case: str, model: Any, bad: dict[str, Any], line: str) -> None:
    with pytest.raises(SpecError) as info:
        coerce_spec(bad, model)
    assert f"invalid {model.__name__} spec:\n  {line}" in str(info.value)
    assert "Extra inputs are not permitted" not in str(info.value)


@pytest.mark.parametrize(("case", "model", "bad", "line"), CASES, ids=IDS)
def test_a_yaml_document(case: str, model: Any, bad: dict[str, Any], line: str) -> None:
    with pytest.raises(SpecError) as info:
        coerce_spec(yaml.safe_dump(bad), model)
    assert line in str(info.value)


@pytest.mark.parametrize(("case", "model", "bad", "line"), CASES, ids=IDS)
def test_the_cli_render(
    case: str, model: Any, bad: dict[str, Any], line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(bad))
    assert cli_main(["render", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}: invalid {model.__name__} spec:\n")
    assert line in err and "Extra inputs are not permitted" not in err


@pytest.mark.parametrize(("case", "model", "bad", "line"), CASES, ids=IDS)
def test_a_jinja_dict_has_its_keys_checked_at_parse_time(
    case: str, model: Any, bad: dict[str, Any], line: str
) -> None:
    templated = copy.deepcopy(bad)
    templated["display_name"] = "run-{{ ds_nodash }}"
    with pytest.raises(SpecError) as info:
        check_keys(templated, model)
    assert line in str(info.value)
    operator = VertexTrainingOperator if model is DistributedTrainingJob else VertexTuningOperator
    with pytest.raises(SpecError) as info:
        operator(task_id="t", spec=templated)  # building the task is enough
    assert line in str(info.value)


def test_a_jinja_dict_with_good_keys_is_checked_after_rendering() -> None:
    spec = _with(TRAINING, "", "base_output_directory", "{{ params.out }}")
    op = VertexTrainingOperator(task_id="t", spec=spec)  # its keys are fine: no error yet
    with pytest.raises(SpecError) as info:
        op.render_template_fields({"params": {"out": "not-a-bucket"}})  # type: ignore[arg-type]
    assert str(info.value) == (
        "invalid DistributedTrainingJob spec after rendering:\n"
        "  spec.base_output_directory: must be a Cloud Storage URI 'gs://bucket/...' (got 'not-a-bucket')"
    )


def test_a_rendered_typo_in_a_document_template() -> None:
    template = "{{ params.spec }}"
    op = VertexTrainingOperator(task_id="t", spec=template)
    bad = yaml.safe_dump(_with(TRAINING, "", "base_output_dir", "gs://b/x"))
    with pytest.raises(SpecError) as info:
        op.render_template_fields({"params": {"spec": bad}})  # type: ignore[arg-type]
    assert "spec.base_output_dir: unknown field (did you mean base_output_directory?)" in str(info.value)
    assert "after rendering" in str(info.value)


@pytest.mark.parametrize(("case", "model", "bad", "line"), CASES, ids=IDS)
def test_a_model_built_in_python(case: str, model: Any, bad: dict[str, Any], line: str) -> None:
    """Keyword construction and ``model_validate`` raise a ``SpecValidationError``: still a pydantic
    ``ValidationError`` (``except ValidationError`` keeps working), its text the project's lines (no
    ``spec.`` root: the model is not in an operator's field)."""
    for build in (
        lambda: model(**bad),
        lambda: model.model_validate(bad),
        lambda: model.model_validate_json(json.dumps(bad)),
    ):
        with pytest.raises(ValidationError) as info:
            build()
        assert isinstance(info.value, SpecValidationError)
        text = str(info.value)
        assert text.startswith(f"invalid {model.__name__} spec:\n  ")
        assert "\n  " + line.removeprefix("spec.") in text
        assert "Extra inputs are not permitted" not in text
        assert [e["type"] for e in info.value.errors()] == ["extra_forbidden"]  # pydantic's own errors


def test_a_typo_in_a_nested_model_built_in_python() -> None:
    with pytest.raises(ValidationError) as info:
        WorkerPool(
            machine=Machine(machine_type="n1-standard-4"), container=Container(image_uri="t"), replcia_count=2
        )
    assert (
        str(info.value)
        == "invalid WorkerPool spec:\n  replcia_count: unknown field (did you mean replica_count?)"
    )
    with pytest.raises(SpecValidationError) as info:
        Machine(machine_type="n1-standard-4", acelerator_count=1)
    assert "acelerator_count: unknown field (did you mean accelerator_count?)" in str(info.value)


def test_a_rule_of_a_model_built_in_python() -> None:
    with pytest.raises(SpecValidationError) as info:
        DistributedTrainingJob(
            display_name="job",
            primary=WorkerPool(
                machine=Machine(machine_type="n1-standard-4"), container=Container(image_uri="t")
            ),
            reduction_server=ReductionServer(replica_count=2),
        )
    text = str(info.value)
    assert text.startswith("invalid DistributedTrainingJob spec:\n  reduction_server: ")
    assert "Value error" not in text and "validation error for" not in text


def test_a_spec_validation_error_keeps_pydantic_errors() -> None:
    """The errors behind the text are pydantic's: same types, locations, messages and inputs."""
    bad = _with(TRAINING, "primary", "replica_count", 2)
    bad["scheduling"] = {"strategy": "CHEAP", "timeout": "soon"}
    raw = DistributedTrainingJob.__pydantic_validator__  # pydantic's validator, not the spec's hook
    with pytest.raises(ValidationError) as expected:
        raw.validate_python(bad)
    assert not isinstance(expected.value, SpecValidationError)
    with pytest.raises(SpecValidationError) as got:
        DistributedTrainingJob.model_validate(bad)
    assert got.value.errors(include_url=False, include_context=False) == expected.value.errors(
        include_url=False, include_context=False
    )
    assert got.value.title == expected.value.title == "DistributedTrainingJob"
