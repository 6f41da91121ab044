"""The emulator's Logging filter: grammar, precedence, bounds."""

from __future__ import annotations

import time
from typing import Any

import pytest

from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos
from vertex_emulator.log_filter import LogFilterError, compile_log_filter, severity_number


def _entry(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "resource.type": "ml_job",
        "resource.labels.job_id": "42",
        "resource.labels.task_name": "workerpool0-0",
        "severity": 200,
        "timestamp": rfc3339_nanos("2026-01-01T00:00:10Z"),
        "textPayload": "loss=0.5",
        "payload": "loss=0.5",
    }
    base.update(fields)
    return base


@pytest.mark.parametrize(
    ("text", "entry", "expected"),
    [
        ("", _entry(), True),
        ('resource.type="ml_job"', _entry(), True),
        ("resource.labels.job_id=42", _entry(), True),
        ("resource.labels.job_id!=42", _entry(), False),
        ("severity>=WARNING", _entry(), False),
        ("severity>=WARNING", _entry(severity=500), True),
        ("severity<400", _entry(), True),
        ("severity=200", _entry(), True),
        ('timestamp>="2026-01-01T00:00:10Z"', _entry(), True),
        ('timestamp>"2026-01-01T00:00:10Z"', _entry(), False),
        ("timestamp<2026-01-01T00:00:11.5Z", _entry(), True),
        (
            'labels."ml.googleapis.com/trial_id"="3"',
            _entry(**{"labels.ml.googleapis.com/trial_id": "3"}),
            True,
        ),
        ('labels."ml.googleapis.com/trial_id":*', _entry(), False),
        ("textPayload:LOSS", _entry(), True),
        ("loss", _entry(), True),
        ('"gradient"', _entry(), False),
        # NOT binds tightest, then OR, then AND: a AND b OR c is a AND (b OR c)
        ("resource.labels.job_id=1 AND severity=200 OR resource.type=ml_job", _entry(), False),
        ("resource.labels.job_id=42 AND severity=500 OR resource.type=ml_job", _entry(), True),
        ("NOT severity=200 OR resource.labels.job_id=42", _entry(), True),
        ("-severity=200", _entry(), False),
        ("NOT NOT severity=200", _entry(), True),
        ("(resource.labels.job_id=1 OR resource.labels.job_id=42) severity=INFO", _entry(), True),
        ("resource.labels.task_name=workerpool0-0 ANDROID", _entry(), False),
    ],
)
def test_filter_semantics(text: str, entry: dict[str, Any], expected: bool) -> None:
    assert compile_log_filter(text)(entry) is expected


@pytest.mark.parametrize(
    "text",
    [
        "severity>=",
        "AND severity=INFO",
        "severity=INFO AND",
        "(severity=INFO",
        "severity=INFO)",
        "=x",
        "nope.x=1",
    ],
)
def test_malformed_filters_name_the_rule(text: str) -> None:
    with pytest.raises(LogFilterError, match=r"filter: .+ \(at character \d+"):
        compile_log_filter(text)


def test_severity_numbers() -> None:
    assert severity_number("warning") == 400
    assert severity_number("450") == 450
    with pytest.raises(LogFilterError, match="severity must be one of"):
        severity_number("LOUD")


def test_parsing_is_linear_in_the_filter_length() -> None:
    """20,000 characters of terms compile in well under a second (no backtracking)."""
    terms = " OR ".join(f'resource.labels.job_id="{i}"' for i in range(600))[:19_990]
    terms = terms[: terms.rfind(" OR ")]
    started = time.perf_counter()
    predicate = compile_log_filter(terms)
    assert time.perf_counter() - started < 1.0
    assert predicate(_entry(**{"resource.labels.job_id": "7"}))
    quotes = '"' + "\\" * 19_000
    with pytest.raises(LogFilterError, match="unterminated"):
        compile_log_filter(quotes)
