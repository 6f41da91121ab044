"""One label rule for the specs and the hooks (airflow_vertex_dist.common.labels).

A spec's ``labels`` used to pass validation with international letters that the hook then refused at
run time (``{"équipe": "données"}``). Both now ask the same module, so they always agree.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from airflow_vertex_dist.hooks.labels import validate_labels
from airflow_vertex_dist.specs import DistributedTrainingJob

from ._helpers import pool


def spec_accepts(labels: dict[str, Any]) -> bool:
    try:
        DistributedTrainingJob(display_name="x", primary=pool(), labels=labels)
    except ValidationError:
        return False
    return True


def hook_accepts(labels: dict[str, Any]) -> bool:
    try:
        validate_labels(labels, field="labels")
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("labels", "valid"),
    [
        ({"équipe": "données"}, True),
        ({"機械": "学習"}, True),  # letters without case (Lo)
        ({"チーム": "x"}, False),  # "ー" is a modifier letter (Lm), not Ll or Lo
        ({"team": "ml-ops_2"}, True),
        ({"team": ""}, True),
        ({"step": "٣"}, True),  # a number of another script
        ({"Équipe": "x"}, False),  # uppercase
        ({"team": "Données"}, False),
        ({"ǅ": "x"}, False),  # titlecase
        ({"_team": "x"}, False),
        ({"9lives": "x"}, True),  # the service: "Label keys must start with a letter or number"
        ({"٣x": "x"}, True),
        ({"team": "a b"}, False),
        ({"team": "a.b"}, False),
        ({"k" * 63: "v" * 63}, True),
        ({"k" * 64: "v"}, False),  # the service: "less than 64 characters in length"
        ({"team": "v" * 64}, False),
        ({"k" * 65: "v"}, False),
        ({"team": "é" * 63}, True),  # 63 code points, 126 bytes
        ({"team": "é" * 64}, False),
        ({"team": "日" * 42}, True),  # 126 bytes
        ({"team": "日" * 43}, False),  # 129 bytes: "less that 128 bytes ... when encoded in UTF-8"
        ({"日" * 43: "v"}, False),
    ],
)
def test_spec_and_hook_give_the_same_answer(labels: dict[str, str], valid: bool) -> None:
    assert spec_accepts(labels) is valid
    assert hook_accepts(labels) is valid


def test_the_spec_error_names_the_field_and_the_rule() -> None:
    with pytest.raises(ValidationError, match=r"labels\.team: label value 'Données' may contain only"):
        DistributedTrainingJob(display_name="x", primary=pool(), labels={"team": "Données"})


@given(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3))
def test_spec_and_hook_agree_on_any_labels(labels: dict[str, str]) -> None:
    assert spec_accepts(labels) == hook_accepts(labels)
