"""A Jinja syntax error in a spec field fails when Airflow imports the DAG file (its DagBag), naming the
task's field, the string's path in the spec and the line; names, filters and macros wait for rendering."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from airflow_vertex_dist.operators.spec_field import SpecError, check_template_syntax

HEADER = textwrap.dedent(
    """
    from datetime import datetime

    from airflow.sdk import DAG

    from airflow_vertex_dist.operators import VertexTrainingOperator
    from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER

    spec = SEED_REDUCTION_SERVER.model_dump(mode="json")
    """
)


def _import_errors(tmp_path: Path, body: str) -> dict[str, str]:
    """The import errors of a DAG file of ``HEADER`` + ``body``, as Airflow's DagBag records them."""
    try:  # Airflow >= 3.2
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.1
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]

    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / "templated.py").write_text(HEADER + textwrap.dedent(body))
    bag = DagBag(dag_folder=str(folder))  # the example DAGs are off (tests/conftest.py)
    return {Path(path).name: str(error) for path, error in bag.import_errors.items()}


def test_an_unclosed_expression_fails_the_dag_files_import_naming_the_field(tmp_path: Path) -> None:
    errors = _import_errors(
        tmp_path,
        """
        spec["display_name"] = "train {{ params.x "
        with DAG("unclosed", schedule=None, start_date=datetime(2024, 1, 1), params={"x": "a"}):
            VertexTrainingOperator(task_id="train", spec=spec)
        """,
    )
    error = errors["templated.py"]
    assert "invalid template in field 'spec' of task 'train'" in error, error
    assert "spec.display_name: 'train {{ params.x ': Jinja syntax error on line 1: unexpected end" in error


def test_a_spec_document_names_the_line_of_the_error(tmp_path: Path) -> None:
    errors = _import_errors(
        tmp_path,
        '''
        DOCUMENT = """\\
        display_name: "{{ params.name }}"
        primary:
          machine: {machine_type: n1-standard-4}
          container: {image_uri: "python:3.11", args: ["{% if params.fast %}--fast"]}
        """
        with DAG("document", schedule=None, start_date=datetime(2024, 1, 1), params={"name": "n"}):
            VertexTrainingOperator(task_id="train", spec=DOCUMENT)
        ''',
    )
    error = errors["templated.py"]
    assert "invalid template in field 'spec' of task 'train'" in error, error
    quoted = """'  container: {image_uri: "python:3.11", args: ["{% if params.fast %}--fast"]}'"""
    assert f"\n  spec: {quoted}: Jinja syntax error on line 4: " in error, error


def test_names_and_filters_wait_for_rendering(tmp_path: Path) -> None:
    """Only the syntax is judged at import: a DAG's own macros and filters, known when it renders, pass."""
    errors = _import_errors(
        tmp_path,
        """
        spec["display_name"] = "{{ params.x | shout }}-{{ stamp() }}{% do [].append(1) %}"
        with DAG(
            "macros",
            schedule=None,
            start_date=datetime(2024, 1, 1),
            params={"x": "a"},
            user_defined_filters={"shout": str.upper},
            user_defined_macros={"stamp": lambda: "s"},
        ):
            VertexTrainingOperator(task_id="train", spec=spec)
        """,
    )
    assert errors == {}


@pytest.mark.parametrize(
    ("value", "path", "line"),
    [
        ({"labels": {"day": "{{ ds_nodash"}}, "spec.labels.day", 1),
        (
            {"primary": {"container": {"args": ["ok", "{% for x in y %}"]}}},
            "spec.primary.container.args[1]",
            1,
        ),
        ({"display_name": "a\n{{ b }}\n{# c"}, "spec.display_name", 3),
    ],
)
def test_the_error_gives_the_strings_path_and_line(value: Any, path: str, line: int) -> None:
    from jinja2.sandbox import SandboxedEnvironment

    with pytest.raises(SpecError) as caught:
        check_template_syntax(value, SandboxedEnvironment(), task_id="t")
    quoted = _strings(value)[0].splitlines()[line - 1]  # a string of many lines: the line of the error
    assert f"{path}: {quoted!r}: Jinja syntax error on line {line}: " in str(caught.value)
    check_template_syntax({"display_name": "{{ undefined_name | no_such_filter }}"}, SandboxedEnvironment())


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if "{" in value else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return [s for v in value for s in _strings(v)]
