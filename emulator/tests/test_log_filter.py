"""The emulator's Logging filter: grammar, precedence, bounds."""

from __future__ import annotations

from typing import Any

import pytest
from timing import assert_linear

from vertex_emulator.cloud_logging.query import (
    LogFilterError,
    compile_log_filter,
    parse_log_filter,
    severity_number,
)
from vertex_emulator.core.timefmt import rfc3339_nanos


def _entry(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "resource.type": "ml_job",
        "resource.labels.job_id": "42",
        "resource.labels.task_name": "workerpool0-0",
        "severity": 200,
        "timestamp": rfc3339_nanos("2026-01-01T00:00:10Z"),
        "logName": "projects/p/logs/workerpool0-0",
        "textPayload": "loss=0.5",
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
        # a global restriction looks at every field, not only the payload (the reference's "has")
        ("WORKERPOOL0", _entry(), True),
        # string comparisons are case-insensitive: "String comparisons aren't case sensitive"
        ('resource.type="ML_JOB"', _entry(), True),
        ('resource.labels.task_name="WorkerPool0-0"', _entry(), True),
        ('resource.labels.task_name!="WORKERPOOL0-0"', _entry(), False),
        ('textPayload="LOSS=0.5"', _entry(), True),
        ('logName="PROJECTS/P/LOGS/WORKERPOOL0-0"', _entry(), True),
        # value groups: field OP (value OR value ...)
        ('resource.labels.task_name=("workerpool1-0" OR "workerpool0-0")', _entry(), True),
        ('resource.labels.task_name=("workerpool1-0" OR "workerpool2-0")', _entry(), False),
        ("resource.labels.task_name=(workerpool1-0 OR NOT workerpool2-0)", _entry(), True),
        ("resource.labels.job_id=(42 AND 43)", _entry(), False),
        ("textPayload:(loss AND 0.5)", _entry(), True),
        ("textPayload:(loss (gradient OR 0.5))", _entry(), True),
        ("severity=(WARNING OR INFO)", _entry(), True),
        ("NOT resource.labels.job_id=(1 OR 2)", _entry(), True),
        # log_id(): the logName's LOG_ID, percent-decoded
        ('log_id("workerpool0-0")', _entry(), True),
        ('LOG_ID("workerpool1-0")', _entry(), False),
        (
            'log_id("ml.googleapis.com/42")',
            _entry(logName="projects/p/logs/ml.googleapis.com%2F42"),
            True,
        ),
        ('log_id("ml.googleapis.com/42")', _entry(), False),
        # numbers in jsonPayload compare as numbers; other values as text
        ("jsonPayload.loss<0.5", _entry(**{"jsonPayload.loss": 0.25}), True),
        ("jsonPayload.step>9", _entry(**{"jsonPayload.step": 10}), True),
        ("jsonPayload.step>9", _entry(**{"jsonPayload.step": "10"}), False),
        ("jsonPayload.ok=TRUE", _entry(**{"jsonPayload.ok": True}), True),
        ("jsonPayload.missing!=x", _entry(), False),
        # comments run to the end of the line
        ("-- a comment\nresource.labels.job_id=42 -- another", _entry(), True),
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
        "resource.labels.task_name=(",
        "resource.labels.task_name=(a OR)",
        "resource.labels.task_name=(a OR b",
        "log_id(",
        'log_id("a" "b")',
    ],
)
def test_malformed_filters_name_the_rule(text: str) -> None:
    with pytest.raises(LogFilterError, match=r"filter: .+ \(at character \d+"):
        compile_log_filter(text)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("sample(insertId, 0.25)", "the function sample() is not supported"),
        ('SEARCH("hello")', "the function SEARCH() is not supported"),
        ('SEARCH(textPayload, "hello")', "the function SEARCH() is not supported"),
        ('resource.type="ml_job" cast(jsonPayload.x, STRING)="1"', "the function cast() is not supported"),
        ('regex_extract(textPayload, "(a)")="a"', "regex_extract() is not supported"),
        ('ip_in_net(jsonPayload.ip, "10.0.0.0/8")', "ip_in_net() is not supported"),
        ("frobnicate(x)", "the unknown function frobnicate() is not supported"),
        ('textPayload=~"lo.s"', "regular expressions"),
        ('textPayload!~"lo.s"', "regular expressions"),
    ],
)
def test_what_the_emulator_cannot_evaluate_is_refused_by_name(text: str, needle: str) -> None:
    """Never a silent empty match: every construct the emulator does not evaluate is an error."""
    with pytest.raises(LogFilterError) as caught:
        compile_log_filter(text)
    assert needle in str(caught.value)


def test_the_top_level_pins_jobs_tasks_and_times() -> None:
    """What the API uses to skip files is a superset of what the predicate accepts."""
    stamp = "2026-01-01T00:00:10Z"
    query = parse_log_filter(
        f'resource.type="ml_job" AND (resource.labels.job_id="A" OR resource.labels.job_id=b) '
        f'AND resource.labels.task_name=("workerpool0-0" OR service) AND timestamp>="{stamp}"'
    )
    assert query.sets == {
        "resource.labels.job_id": frozenset({"a", "b"}),
        "resource.labels.task_name": frozenset({"workerpool0-0", "service"}),
    }
    assert (query.since, query.until) == (rfc3339_nanos(stamp), None)
    # an OR with a term that pins nothing pins nothing; a NOT pins nothing
    assert parse_log_filter("resource.labels.job_id=1 OR severity>=ERROR").sets == {}
    assert parse_log_filter("NOT resource.labels.job_id=1").sets == {}
    assert parse_log_filter("resource.labels.job_id:1").sets == {}
    both = parse_log_filter(f'timestamp>"{stamp}" OR timestamp="2026-01-01T00:00:05Z"')
    assert (both.since, both.until) == (rfc3339_nanos("2026-01-01T00:00:05Z"), None)
    window = parse_log_filter('timestamp<="2026-01-01T00:00:20Z" timestamp>="2026-01-01T00:00:01Z"')
    first, last = rfc3339_nanos("2026-01-01T00:00:01Z"), rfc3339_nanos("2026-01-01T00:00:20Z")
    assert (window.since, window.until) == (first, last)


def test_severity_numbers() -> None:
    assert severity_number("warning") == 400
    assert severity_number("450") == 450
    with pytest.raises(LogFilterError, match="severity must be one of"):
        severity_number("LOUD")


def test_parsing_is_linear_in_the_filter_length() -> None:
    """20,000 characters of OR'd terms, or of backslashes in an unterminated string, cost no more than
    one term or one string of the same length (no backtracking): a ratio on this thread's CPU clock
    (``assert_linear``), not a wall-clock bound a loaded machine could break."""
    terms = " OR ".join(f'resource.labels.job_id="{i}"' for i in range(600))[:19_990]
    terms = terms[: terms.rfind(" OR ")]
    one_term = 'resource.labels.job_id="' + "7" * (len(terms) - 25) + '"'
    assert len(one_term) == len(terms)
    assert_linear(lambda: compile_log_filter(terms), lambda: compile_log_filter(one_term), "600 OR'd terms")
    predicate = compile_log_filter(terms)
    assert predicate(_entry(**{"resource.labels.job_id": "7"}))
    quotes = '"' + "\\" * 19_000
    with pytest.raises(LogFilterError, match="unterminated"):
        compile_log_filter(quotes)

    def unterminated() -> None:
        with pytest.raises(LogFilterError):
            compile_log_filter(quotes)

    closed = '"' + "a" * 18_999 + '"'
    assert_linear(unterminated, lambda: compile_log_filter(closed), "19,000 backslashes, unterminated")
