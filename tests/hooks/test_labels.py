from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_vertex_dist.common.labels import is_label_char, is_label_letter, labels_error
from airflow_vertex_dist.hooks.labels import (
    label_filter,
    merge_labels,
    retry_budget,
    run_hash,
    run_labels,
    sanitize_label_value,
    spec_fingerprint,
    validate_labels,
)
from vertex_emulator.jobservice.filters import compile_filter


def valid_value(value: str) -> bool:
    """A label value the project writes: valid for Vertex AI, and starting with a letter."""
    return labels_error("labels", {"k": value}) is None and bool(value) and is_label_letter(value[0])


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
        ("Ünïcode", "ünïcode-"),
        ("Équipe Données", "équipe-données-"),
        ("ends-like-a-hash-0123abcd", "ends-like-a-hash-0123abcd-"),
    ],
)
def test_sanitize_appends_hash_when_lossy(raw: str, prefix: str) -> None:
    value = sanitize_label_value(raw)
    assert value.startswith(prefix), value
    assert re.fullmatch(r".*-[0-9a-f]{8}", value)
    assert valid_value(value)


@pytest.mark.parametrize("valid", ["fit_model-2", "ünïcode", "données", "日本語", "étape_٣"])
def test_sanitize_keeps_valid_values(valid: str) -> None:
    """International letters are valid in Vertex AI labels (see common.labels): kept as they are."""
    assert sanitize_label_value(valid) == valid


def test_a_kept_value_never_equals_a_hashed_one() -> None:
    """The docstring used to promise that two DAG ids never share a value, but "My_DAG" was hashed
    to exactly the valid id "my_dag-<8 hex>", which was kept as it is."""
    hashed = sanitize_label_value("My_DAG")
    assert re.fullmatch(r"my_dag-[0-9a-f]{8}", hashed)
    assert sanitize_label_value(hashed) != hashed
    assert len({sanitize_label_value(v) for v in ("My_DAG", hashed, "my_dag")}) == 3


@pytest.mark.parametrize("raw", ["日" * 60, "é" * 63, "données_" * 9])
def test_sanitize_cuts_international_values_to_127_bytes(raw: str) -> None:
    """63 characters of a non-Latin script are up to 189 bytes: the service takes at most 127."""
    value = sanitize_label_value(raw)
    assert valid_value(value), value
    assert len(value.encode("utf-8")) <= 127


@pytest.mark.parametrize("dag_id", ["d" * 250, "Daily_" * 42, "日次の学習" * 50])
def test_a_250_character_dag_id_still_gives_valid_run_labels(dag_id: str) -> None:
    labels = run_labels(dag_id, "t" * 250, "manual__" + "r" * 242, 3)
    validate_labels(labels)
    assert all(len(v) <= 63 and len(v.encode("utf-8")) <= 127 for v in labels.values())
    assert labels["airflow-dag"] != run_labels(dag_id[:-1] + "x", "t", "r")["airflow-dag"]


def test_sanitize_long_values_differ_by_hash() -> None:
    a, b = sanitize_label_value("a" * 80 + "1"), sanitize_label_value("a" * 80 + "2")
    assert len(a) == len(b) == 63
    assert a != b


@given(st.text(max_size=200))
def test_sanitize_always_valid(raw: str) -> None:
    value = sanitize_label_value(raw)
    assert valid_value(value), value
    assert len(value) <= 63 and len(value.encode("utf-8", "surrogatepass")) <= 127
    if value == raw:
        assert all(map(is_label_char, raw))


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=80))
def test_sanitize_keeps_distinct_ids_distinct(a: str, b: str) -> None:
    if a != b:
        assert sanitize_label_value(a) != sanitize_label_value(b)


def test_validate_labels_names_the_field_and_rule() -> None:
    with pytest.raises(ValueError, match=r"labels\.team: label value 'Data Science' may contain only"):
        validate_labels({"team": "Data Science"})
    with pytest.raises(
        ValueError, match=r"labels: label key '_x' must start with a lowercase letter or a number"
    ):
        validate_labels({"_x": "x"})
    validate_labels({"9lives": "x"})  # the service: "Label keys must start with a letter or number"
    validate_labels({"team": "x" * 63})  # the service: "less than 64 characters in length"
    with pytest.raises(ValueError, match=r"labels\.team: label value must be at most 63 characters"):
        validate_labels({"team": "x" * 64})
    with pytest.raises(ValueError, match=r"labels: label key 'k{64}' must be 1-63 characters"):
        validate_labels({"k" * 64: "x"})
    validate_labels({"team": "日" * 42})  # 126 bytes
    with pytest.raises(ValueError, match=r"labels\.team: label value must be less than 128 bytes in UTF-8"):
        validate_labels({"team": "日" * 43})  # 43 characters, 129 bytes
    with pytest.raises(ValueError, match=r"label key '日{43}' must be less than 128 bytes in UTF-8"):
        validate_labels({"日" * 43: "x"})
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


def test_sanitized_values_can_be_found_again_by_a_list_filter() -> None:
    """International letters survive the List filter (the hook finds a run's jobs by these labels)."""
    labels = run_labels("données_quotidiennes", "entraîner", "run", -1)
    assert labels["airflow-dag"] == "données_quotidiennes"
    assert compile_filter(label_filter(labels))({"labels": labels})


def test_spec_fingerprint_hashes_the_body_without_the_providers_labels() -> None:
    body = {"displayName": "fit", "jobSpec": {"workerPoolSpecs": [{"replicaCount": "1"}]}}
    base = spec_fingerprint(body)
    assert re.fullmatch(r"s[0-9a-f]{40}", base)
    with_provider_labels = {
        **body,
        "labels": {
            **run_labels("d", "t", "r"),
            "airflow-spec": "sdeadbeef",
            "airflow-budget": "m3",
            "create-token": "t123",
        },
    }
    assert spec_fingerprint(with_provider_labels) == base  # per-run and per-try labels do not count
    assert spec_fingerprint({**body, "labels": {}}) == base
    assert spec_fingerprint(dict(reversed(list(body.items())))) == base  # key order does not count
    assert spec_fingerprint({**body, "labels": {"team": "ml"}}) != base  # the user's labels do
    assert spec_fingerprint({**body, "displayName": "fit2"}) != base
    changed = {"displayName": "fit", "jobSpec": {"workerPoolSpecs": [{"replicaCount": "2"}]}}
    assert spec_fingerprint(changed) != base


def test_retry_budget_is_a_valid_label_value() -> None:
    assert [retry_budget(n) for n in (0, 3, -1)] == ["m0", "m3", "m-1"]
    validate_labels({"airflow-budget": retry_budget(-1)})
