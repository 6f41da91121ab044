"""Issue 37, finding 4: template injection through string specs.

A spec given as a JSON or YAML string with a ``params``/``conf`` value inside a quoted string: the
value was rendered into the document's text, so it could end its quoted string and add a second
``command`` key, and the last one won: whoever could trigger a run with conf chose the command. A
string spec is now parsed first and Jinja rendered inside its string values only (a rendered value
stays one value), and a key given twice is refused naming the key.

The operator renders with Airflow's own Jinja environment (``render_template_fields``), as a run does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.spec_field import SpecError
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from tests.stack.figures import Figures

COMMAND = ["python", "-c", "print('the author wrote this')"]
EVIL = ["sh", "-c", "echo owned"]

#: The author's spec: the run's ``name`` param goes inside a quoted string, after the command.
JSON_SPEC = json.dumps(
    {
        "display_name": "train",
        "primary": {
            "machine": {"machine_type": "n1-standard-4"},
            "container": {
                "image_uri": "python:3.11",
                "command": COMMAND,
                "args": ["--name={{ params.name }}"],
            },
        },
    }
)
YAML_SPEC = """\
display_name: train
primary:
  machine: {machine_type: n1-standard-4}
  container:
    image_uri: python:3.11
    command: ["python", "-c", "print('the author wrote this')"]
    args: ["--name={{ params.name }}"]
"""
#: What a conf value ends the quoted string with, in each format: a second command, then a harmless
#: key so that the document stays valid.
INJECTIONS = {
    "json": 'x"], "command": ["sh", "-c", "echo owned"], "args": ["y',
    "yaml": 'x"]\n    command: ["sh", "-c", "echo owned"]\n    args: ["y',
}


def _render(spec: str, params: dict[str, Any], task_id: str = "train") -> Any:
    with DAG(f"spec_injection_{task_id}", schedule=None):
        task = VertexTrainingOperator(task_id=task_id, spec=spec)
    task.render_template_fields({"params": params, "ds": "2026-01-01"})
    return task.validated_spec


@pytest.mark.parametrize(("kind", "spec"), [("json", JSON_SPEC), ("yaml", YAML_SPEC)])
def test_a_conf_value_cannot_close_its_quote_and_replace_the_command(kind: str, spec: str) -> None:
    value = INJECTIONS[kind]
    container = _render(spec, {"name": value}, task_id=kind).primary.container
    assert list(container.command) == COMMAND  # today: the injected command won
    assert list(container.args) == [f"--name={value}"]  # the whole value, one argument


@pytest.mark.parametrize(
    ("spec", "key"),
    [
        ('{"display_name": "a", "display_name": "b", "primary": {}}', "display_name"),
        ("primary:\n  container:\n    command: [a]\n    command: [b]\n", "command"),
    ],
)
def test_a_key_given_twice_in_a_string_spec_is_refused_naming_it(spec: str, key: str) -> None:
    with pytest.raises(SpecError, match=rf"duplicate key '{key}': a key may appear only once"):
        _render(spec, {})
    with (
        DAG("spec_duplicate_static", schedule=None),
        pytest.raises(SpecError, match=f"duplicate key '{key}'"),
    ):
        VertexTrainingOperator(task_id="static", spec=spec)  # no Jinja: refused when the DAG is parsed


def test_one_expression_still_renders_the_whole_document() -> None:
    """The documented form ``"{{ var.value.my_spec }}"``: the document comes whole from one value (a
    Variable, a param) and is parsed as it is, nothing in it rendered again."""
    document = YAML_SPEC.replace("{{ params.name }}", "{{ not rendered }}")
    spec = _render("{{ params.spec }}", {"spec": document})
    assert list(spec.primary.container.command) == COMMAND
    assert list(spec.primary.container.args) == ["--name={{ not rendered }}"]


def test_jinja_that_writes_the_documents_text_is_refused_with_the_fix() -> None:
    spec = "primary:\n  container:\n    args: [{% for a in params.args %}'{{ a }}',{% endfor %}]\n"
    with pytest.raises(SpecError, match=r"spec: a spec given as a string is parsed as JSON or YAML first"):
        _render(spec, {"args": ["a"]})
    Figures.record(
        "security_probes",
        "string_spec_injection",
        {
            "input": 'a JSON and a YAML spec string with args: ["--name={{ params.name }}"], name = x"], "command": ["sh", "-c", "echo owned"], "args": ["y; a spec string giving a key twice',  # noqa: E501 - the table's text
            "answer": "the author's command kept, the value one argument; SpecError naming the duplicate key (was: the injected command won, the last key taken)",  # noqa: E501 - the table's text
        },
    )
