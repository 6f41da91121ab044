"""The typed accessors of ``airflow_vertex_dist.jobs``: one reading of each fact of a job dict.

``replica_count`` is checked property-style: every int and every decimal string reads as its int,
omitted and null read as 0 (proto3), and anything else is a ``ValueError`` naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from airflow_vertex_dist.jobs.dicts import job_labels, job_spec
from airflow_vertex_dist.jobs.progress import ProgressLog
from airflow_vertex_dist.jobs.replicas import expected_replicas, replica_condition, replica_count

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(INT64)
def test_an_int_reads_as_itself(count: int) -> None:
    assert replica_count({"replicaCount": count}) == count


@given(INT64)
def test_the_int64_json_string_reads_as_its_int(count: int) -> None:
    assert replica_count({"replicaCount": str(count)}) == count


@given(st.dictionaries(st.text().filter(lambda k: k != "replicaCount"), st.integers()))
def test_omitted_reads_as_zero_for_every_pool(pool: dict[str, Any]) -> None:
    assert replica_count(pool) == 0
    assert replica_count({**pool, "replicaCount": None}) == 0


NOT_A_COUNT = st.one_of(
    st.booleans(),
    st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.text().filter(lambda s: not (s.removeprefix("-").isascii() and s.removeprefix("-").isdigit())),
)


@given(NOT_A_COUNT)
def test_anything_else_is_an_error_naming_the_field_and_the_rule(raw: Any) -> None:
    with pytest.raises(ValueError, match=r"^jobSpec\.workerPoolSpecs\[1\]\.replicaCount: must be an integer"):
        replica_count({"replicaCount": raw}, field="jobSpec.workerPoolSpecs[1].replicaCount")


def _decimal(text: str) -> bool:
    digits = text.removeprefix("-")
    return digits.isascii() and digits.isdigit()


@given(st.text().filter(lambda s: not _decimal(s)))
@example("")
@example(" 3")
@example("3 ")
@example("+3")
@example("3.0")
@example("0x10")
@example("1e3")
@example("٣")
@example("--1")
@example("-")
def test_strings_that_are_not_decimal_integers(raw: str) -> None:
    with pytest.raises(ValueError, match=r"^replicaCount: .*got"):
        replica_count({"replicaCount": raw})


def _job(*pools: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "projects/p/locations/l/customJobs/1",
        "state": "JOB_STATE_RUNNING",
        "jobSpec": {"enableWebAccess": True, "workerPoolSpecs": list(pools)},
    }


def test_expected_replicas_reads_every_pool_the_same_way() -> None:
    # an omitted count is 0 in the primary pool too (the service never returns a primary without its 1)
    assert expected_replicas(_job({"machineSpec": {}}, {}, {"replicaCount": 2})) == [
        "workerpool2-0",
        "workerpool2-1",
    ]


def test_a_bad_count_is_an_error_verdict_and_no_progress_line() -> None:
    job = _job({"replicaCount": "1"}, {"replicaCount": "two"})
    with pytest.raises(ValueError, match=r"workerPoolSpecs\[1\]\.replicaCount"):
        expected_replicas(job)
    verdict = replica_condition(job, ["workerpool0-0"])
    assert verdict is not None and verdict.status == "error"
    assert "workerPoolSpecs[1].replicaCount" in verdict.message
    assert ProgressLog().update(job) == ["job projects/p/locations/l/customJobs/1: submitted -> RUNNING"]


def test_job_spec_and_labels() -> None:
    spec = {"workerPoolSpecs": []}
    assert job_spec({"jobSpec": spec}) is spec
    assert job_spec({"trialJobSpec": spec}) is spec
    assert job_spec({"jobSpec": None}) == {}
    assert job_spec({}) == {}
    assert job_labels({"labels": {"a": "b"}}) == {"a": "b"}
    assert job_labels({"labels": None}) == {}
    assert job_labels({}) == {}
