from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_vertex_dist.emulator.filters import compile_filter
from airflow_vertex_dist.hooks.labels import (
    label_filter,
    merge_labels,
    run_hash,
    run_labels,
    sanitize_label_value,
    validate_labels,
)

VALUE_RE = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


def test_run_labels_shape() -> None:
    labels = run_labels("train_dag", "fit", "scheduled__2026-01-01T00:00:00+00:00", -1)
    assert labels["managed-by"] == "airflow-vertex-dist"
    assert labels["airflow-dag"] == "train_dag"  # already valid: kept as is
    assert labels["airflow-task"] == "fit"
    assert re.fullmatch(r"r[0-9a-f]{40}", labels["airflow-run"])
    validate_labels(labels)


def test_run_hash_distinguishes_every_part() -> None:
    base = run_hash("d", "t", "r", -1)
    assert base == run_hash("d", "t", "r", -1)
    assert len({base, run_hash("d2", "t", "r", -1), run_hash("d", "t2", "r", -1)}) == 3
    assert len({base, run_hash("d", "t", "r2", -1), run_hash("d", "t", "r", 0)}) == 3
    # no ambiguity from joining the parts
    assert run_hash("a-b", "c", "r") != run_hash("a", "b-c", "r")


@pytest.mark.parametrize(
    ("raw", "prefix"),
    [
        ("My_DAG", "my_dag-"),
        ("etl.daily.load", "etl-daily-load-"),
        ("7days", "x7days-"),
        ("", "x-"),
        ("ünïcode", "x-n-code-"),
    ],
)
def test_sanitize_appends_hash_when_lossy(raw: str, prefix: str) -> None:
    value = sanitize_label_value(raw)
    assert value.startswith(prefix), value
    assert re.fullmatch(r".*-[0-9a-f]{8}", value)
    assert VALUE_RE.match(value)


def test_sanitize_keeps_valid_values() -> None:
    assert sanitize_label_value("fit_model-2") == "fit_model-2"


def test_sanitize_long_values_differ_by_hash() -> None:
    a, b = sanitize_label_value("a" * 80 + "1"), sanitize_label_value("a" * 80 + "2")
    assert len(a) == len(b) == 63
    assert a != b


@given(st.text(max_size=200))
def test_sanitize_always_valid(raw: str) -> None:
    value = sanitize_label_value(raw)
    assert VALUE_RE.match(value), value
    if value == raw:
        assert VALUE_RE.match(raw)


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=80))
def test_sanitize_keeps_distinct_ids_distinct(a: str, b: str) -> None:
    if a != b:
        assert sanitize_label_value(a) != sanitize_label_value(b)


def test_validate_labels_names_the_field_and_rule() -> None:
    with pytest.raises(ValueError, match=r"labels\.team: value 'Data Science' must be at most 63"):
        validate_labels({"team": "Data Science"})
    with pytest.raises(ValueError, match=r"key '9lives' must be 1-63 .* starting with a letter"):
        validate_labels({"9lives": "x"})
    with pytest.raises(ValueError, match="at most 64 labels"):
        validate_labels({f"k{i}": "v" for i in range(65)})


def test_merge_labels_extra_wins_and_validates() -> None:
    assert merge_labels({"a": "1", "b": "2"}, {"b": "3"}) == {"a": "1", "b": "3"}
    with pytest.raises(ValueError, match=r"body\.labels: at most 64"):
        merge_labels({f"k{i}": "v" for i in range(63)}, {"x": "1", "y": "2"}, field="body.labels")


def test_label_filter_matches_in_the_emulator_grammar() -> None:
    labels = run_labels("dag", "task", "run", 2)
    text = label_filter(labels)
    assert text.startswith('labels.airflow-dag="dag" AND ')
    matches = compile_filter(text)
    assert matches({"labels": {**labels, "other": "x"}})
    assert not matches({"labels": {**labels, "airflow-run": run_hash("dag", "task", "run", 3)}})
    with pytest.raises(ValueError, match="at least one label"):
        label_filter({})
