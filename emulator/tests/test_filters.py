"""The List filter language: grammar, precedence, every supported field, and clear errors."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_emulator.jobservice.filters import FilterError, compile_filter

JOBS: list[dict[str, Any]] = [
    {
        "name": "a",
        "displayName": "my_job_1",
        "state": "JOB_STATE_SUCCEEDED",
        "createTime": "2021-05-17T10:00:00.000001Z",
        "labels": {"managed-by": "airflow-vertex-dist", "team": "ml"},
    },
    {
        "name": "b",
        "displayName": "my_job_2",
        "state": "JOB_STATE_FAILED",
        "createTime": "2021-05-18T00:00:00Z",
        "labels": {"team": "data"},
    },
    {
        "name": "c",
        "displayName": "other",
        "state": "JOB_STATE_RUNNING",
        "createTime": "2021-05-19T12:30:00.5Z",
    },
]


def names(text: str) -> list[str]:
    pred = compile_filter(text)
    return [job["name"] for job in JOBS if pred(job)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ["a", "b", "c"]),
        ("   ", ["a", "b", "c"]),
        ('display_name="my_job_1"', ["a"]),
        ("display_name!=other", ["a", "b"]),
        ('display_name:"my_job_*"', ["a", "b"]),
        ('display_name:"*job*"', ["a", "b"]),
        ("display_name:my", []),
        ("display_name:other", ["c"]),
        ('state="JOB_STATE_SUCCEEDED"', ["a"]),
        ("state!=JOB_STATE_FAILED", ["a", "c"]),
        ('create_time>"2021-05-18T00:00:00Z"', ["c"]),
        ("create_time>=2021-05-18T00:00:00Z", ["b", "c"]),
        ("create_time<2021-05-18T00:00:00.000000001Z", ["a", "b"]),
        ("create_time<=2021-05-18T02:00:00+02:00", ["a", "b"]),
        ("create_time=2021-05-18T00:00:00Z", ["b"]),
        ("create_time!=2021-05-18T00:00:00Z", ["a", "c"]),
        ("labels.team=ml", ["a"]),
        ('labels.team="data"', ["b"]),
        ("labels.team!=ml", ["b", "c"]),
        ("labels.managed-by:*", ["a"]),
        ("labels.team:*", ["a", "b"]),
        ("labels:team", ["a", "b"]),
        ("labels.team:data", ["b"]),
        ('state="JOB_STATE_SUCCEEDED" AND display_name:"my_job_*"', ["a"]),
        ('state!="JOB_STATE_FAILED" OR display_name="my_job_2"', ["a", "b", "c"]),
        ('NOT display_name="my_job_1"', ["b", "c"]),
        ("-labels.team:*", ["c"]),
        ("labels.team:* state=JOB_STATE_FAILED", ["b"]),
        # AIP-160: OR binds tighter than AND.
        ("labels.team=ml AND state=JOB_STATE_FAILED OR display_name=my_job_1", ["a"]),
        ("(labels.team=ml AND state=JOB_STATE_FAILED) OR display_name=other", ["c"]),
        (
            "labels.managed-by=airflow-vertex-dist AND (state=JOB_STATE_RUNNING OR "
            "state=JOB_STATE_SUCCEEDED) AND create_time>=2021-01-01T00:00:00Z",
            ["a"],
        ),
        ("NOT (state=JOB_STATE_RUNNING OR state=JOB_STATE_FAILED)", ["a"]),
        ("((display_name=other))", ["c"]),
    ],
)
def test_filter_selects(text: str, expected: list[str]) -> None:
    assert names(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("state=RUNNING", "state must be a JOB_STATE_* name"),
        ("state<JOB_STATE_RUNNING", "state supports = and !="),
        ("display_name>a", "display_name supports =, != and :"),
        ("create_time>yesterday", "create_time must be an RFC 3339 time"),
        ("create_time>2021-05-18T00:00:00", "create_time must be an RFC 3339 time"),
        ("create_time:2021-05-18T00:00:00Z", "create_time supports"),
        ("labels.team<a", "labels.KEY supports"),
        ("labels=x", "labels alone supports only"),
        ("update_time>2021-05-18T00:00:00Z", "unsupported field 'update_time'"),
        ("displayName=x", "unsupported field 'displayName'"),
        ("display_name", "a bare value"),
        ("display_name=", "expected a value"),
        ('display_name="abc', "unterminated quoted string"),
        ("(state=JOB_STATE_RUNNING", "expected ')'"),
        ("state=JOB_STATE_RUNNING)", "unexpected ')'"),
        ("()", "empty parentheses"),
        ("state=JOB_STATE_RUNNING AND", "expected a field name"),
        ("OR state=JOB_STATE_RUNNING", "expected a field name"),
        ("state=JOB_STATE_RUNNING && x=1", "unexpected character '&'"),
    ],
)
def test_bad_filters_name_the_position_and_rule(text: str, message: str) -> None:
    with pytest.raises(FilterError, match="invalid filter") as info:
        compile_filter(text)
    assert message in str(info.value)
    assert 0 <= info.value.pos <= len(text)
