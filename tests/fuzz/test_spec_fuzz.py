"""Specs fuzzed the way an operator receives them: as a rendered template, i.e. a JSON or YAML
*document* (text), possibly damaged, possibly not a mapping at all.

Extends the specs' own property (dict in -> model or ValidationError) to the operator path
(``coerce_spec``): any text either validates to the same model as its dict, or raises ``SpecError``
whose every line names a field path and a rule -- never a YAMLError, TypeError, RecursionError...
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from specs.strategies import jobs, tunings

from airflow_vertex_dist.operators.spec_field import SpecError, coerce_spec
from airflow_vertex_dist.specs import DistributedTrainingJob, HyperparameterTuningJob

SETTINGS = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
#: "spec.primary.replica_count: rule" or "spec: rule", as the operator shows them (a fuzzed unknown
#: key may be any string, so the path is "spec" followed by anything up to ": ")
LINE = re.compile(r"^  spec(?:[.\[].*)?: \S.*", re.S)


def bmp(value: Any) -> Any:
    """``value`` with characters beyond the BMP replaced (their JSON escapes hit a known bug, see
    test_json_documents_parse_as_json)."""
    if isinstance(value, str):
        return "".join(c if ord(c) <= 0xFFFF else "?" for c in value)
    if isinstance(value, dict):
        return {bmp(k): bmp(v) for k, v in value.items()}
    if isinstance(value, list):
        return [bmp(v) for v in value]
    return value


def reference_parse(text: str) -> Any:
    """What the document holds by the documented rule, straight from the parsers: a text that starts
    like JSON and parses as JSON is JSON (a raw DEL in a string, say, which YAML refuses); anything
    else is YAML. ``None`` when neither parses."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            pass
    try:
        return yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        return None


def check_text(text: str, model: type[Any], as_dict: Any) -> None:
    try:
        expected = model.model_validate(as_dict) if isinstance(as_dict, dict) else None
    except ValidationError:
        expected = None
    try:
        got = coerce_spec(text, model)
    except SpecError as exc:
        message = str(exc)
        assert expected is None, f"valid spec refused: {message}"
        head, *lines = message.split("\n")
        if head.startswith("invalid "):
            # one line per error; an unknown key holding a line break spreads its line over two
            assert lines and LINE.match(lines[0]), message
            assert all(LINE.match(line) for line in lines if line.startswith("  spec") and ": " in line), (
                message
            )
        else:  # not a document, or not a mapping: the reason follows (a YAML error spans lines)
            assert head.startswith("spec: "), message
        return
    assert expected is not None and got == expected


@SETTINGS
@given(data=jobs(), as_yaml=st.booleans())
def test_job_documents(data: Any, as_yaml: bool) -> None:
    data = bmp(data)
    text = yaml.safe_dump(data) if as_yaml else json.dumps(data)
    check_text(text, DistributedTrainingJob, data)


@SETTINGS
@given(data=tunings())
def test_tuning_documents(data: Any) -> None:
    data = bmp(data)
    check_text(json.dumps(data), HyperparameterTuningJob, data)


@SETTINGS
@given(data=jobs(clean=True), cut=st.integers(min_value=0, max_value=400), junk=st.text(max_size=6))
def test_damaged_documents_only_raise_spec_error(data: Any, cut: int, junk: str) -> None:
    text = json.dumps(bmp(data))
    damaged = text[: cut % (len(text) + 1)] + junk + text[cut % (len(text) + 1) + 1 :]
    check_text(damaged, DistributedTrainingJob, reference_parse(damaged))


@SETTINGS
@given(text=st.text(max_size=60) | st.binary(max_size=60).map(lambda b: b.decode("latin-1")))
def test_any_text_only_raises_spec_error(text: str) -> None:
    check_text(text, DistributedTrainingJob, reference_parse(text))


def test_alias_bomb_is_a_spec_error() -> None:
    """A billion-laughs style alias bomb ends as a SpecError naming the field, quickly."""
    bomb = "a: &a [x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    with pytest.raises(SpecError, match=r"^invalid DistributedTrainingJob spec:\n  spec"):
        coerce_spec(bomb, DistributedTrainingJob)


def test_deeply_nested_document_is_a_spec_error() -> None:
    with pytest.raises(SpecError):
        coerce_spec("[" * 5000 + "]" * 5000, DistributedTrainingJob)


@pytest.mark.parametrize("name", ["run \U0001f680", "run \x7f"], ids=["emoji-escaped", "raw-del"])
def test_json_documents_parse_as_json(name: str) -> None:
    doc = {
        "display_name": name,
        "primary": {
            "machine": {"machine_type": "n1-standard-4"},
            "container": {"image_uri": "example.com/t:1"},
        },
    }
    model = coerce_spec(json.dumps(doc, ensure_ascii="\x7f" not in name), DistributedTrainingJob)
    assert model.display_name == name
    model.to_api()["displayName"].encode()
