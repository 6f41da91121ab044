"""The shared time formats (common/): RFC 3339 timestamps and protobuf Durations, one definition
each for the specs, the hooks, the triggers and the emulator."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from airflow_vertex_dist.common.durations import MAX_DURATION_S, duration_to_api, parse_duration
from airflow_vertex_dist.common.rfc3339 import (
    format_rfc3339,
    format_rfc3339_nanos,
    now_rfc3339,
    parse_rfc3339,
    rfc3339_key,
    rfc3339_nanos,
    seconds_since,
)
from vertex_emulator.runtime import custom_job_setup


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3600s", timedelta(hours=1)),
        (" 1.5s ", timedelta(seconds=1.5)),
        ("0.000001s", timedelta(microseconds=1)),
        ("1.123456789s", timedelta(seconds=1, microseconds=123456)),
        ("-0.25s", timedelta(seconds=-0.25)),
        ("-1.5s", timedelta(seconds=-1.5)),
        ("3600", None),
        ("1h", None),
        ("1.1234567891s", None),
        ("", None),
    ],
)
def test_durations_are_read_in_the_proto_json_form(text: str, expected: timedelta | None) -> None:
    assert parse_duration(text) == expected


#: every duration of whole seconds within MAX_DURATION_S either way, to the microsecond
_LIMIT_US = (MAX_DURATION_S + 1) * 10**6 - 1
IN_RANGE_US = st.integers(min_value=-_LIMIT_US, max_value=_LIMIT_US)


@settings(max_examples=60, deadline=None)
@given(IN_RANGE_US)
@example(3600 * 10**6)  # "3600s"
@example(1_500_000)  # "1.500000s"
@example(-2_000_000)  # "-2s"
@example(-2_250_000)  # "-2.250000s"
@example(-500_000)  # "-0.500000s"
@example(0)  # "0s"
@example(MAX_DURATION_S * 10**6)
@example(-MAX_DURATION_S * 10**6)
def test_every_duration_in_range_round_trips(micros: int) -> None:
    value = timedelta(microseconds=micros)
    text = duration_to_api(value)
    parsed = parse_duration(text)
    assert parsed == value
    assert duration_to_api(parsed) == text


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=MAX_DURATION_S + 1), st.booleans())
@example(MAX_DURATION_S + 1, False)
@example(MAX_DURATION_S + 1, True)
def test_durations_beyond_the_range_either_way_are_refused(seconds: int, negative: bool) -> None:
    with pytest.raises(ValueError, match="out of range"):
        parse_duration(f"{'-' if negative else ''}{seconds}s")


def test_a_negative_duration_is_shown_as_it_was_given() -> None:
    # a negative fraction was written with floor division: -2.25 s came out as "-3.750000s"
    from airflow_vertex_dist.specs import Scheduling
    from airflow_vertex_dist.specs.errors import SpecValidationError

    with pytest.raises(SpecValidationError, match=r"timeout: must be positive \(got -2\.250000s\)"):
        Scheduling(timeout="-2.25s")


def test_the_emulator_runs_the_timeout_the_specs_accept() -> None:
    read = custom_job_setup.parse_duration
    assert read("1.5s", field="t", default=9.0) == 1.5
    assert read(None, field="t", default=9.0) == read("0s", field="t", default=9.0) == 9.0
    with pytest.raises(ValueError, match="t: must be a duration like '3600s'"):
        read("soon", field="t", default=9.0)
    with pytest.raises(ValueError, match="t: must not be negative"):
        read("-1s", field="t", default=9.0)


def test_timestamps_in_the_v1_json_form() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert format_rfc3339(when) == "2026-01-02T01:04:05.123456Z"
    assert parse_rfc3339("2026-01-02T01:04:05.123456789Z") == when
    assert parse_rfc3339(now_rfc3339()).tzinfo is not None
    nanos = rfc3339_nanos("2026-01-02T01:04:05.123456789Z")
    assert nanos % 1_000_000_000 == 123456789
    assert format_rfc3339_nanos(nanos) == "2026-01-02T01:04:05.123456789Z"
    assert rfc3339_nanos("2026-01-02T03:04:05.5+02:00") == rfc3339_nanos("2026-01-02T01:04:05.500Z")


def test_the_sort_key_orders_fractions_of_any_length() -> None:
    stamps = ["2026-01-02T03:04:05.5Z", "2026-01-02T03:04:05Z", "2026-01-02T03:04:05.05Z", "garbage"]
    assert sorted(stamps, key=rfc3339_key) == [
        "2026-01-02T03:04:05Z",
        "2026-01-02T03:04:05.05Z",
        "2026-01-02T03:04:05.5Z",
        "garbage",
    ]


def test_seconds_since_an_api_time() -> None:
    an_hour_ago = format_rfc3339(datetime.now(timezone.utc) - timedelta(hours=1))
    since = seconds_since(an_hour_ago)
    assert since is not None and 3599 < since < 3700
    assert seconds_since("2026-01-02T03:04:05") is None  # no time zone
    assert seconds_since("yesterday") is None
    assert seconds_since(None) is None


def test_fraction_digits_are_read_in_linear_time() -> None:
    """The provider reads times the service and user filters give it; a fraction of 400,000 digits is
    scanned once (it was rebuilt one character at a time: 80,000 digits took 0.54 s), the first 9 kept."""
    from tests.emulator_files import load

    assert_linear = load("timing").assert_linear

    digits = "2026-01-01T00:00:00." + "1" * 400_000 + "Z"
    benign = " " * (len(digits) - 20) + "2026-01-01T00:00:00Z"
    assert_linear(lambda: rfc3339_nanos(digits), lambda: rfc3339_nanos(benign), "rfc3339_nanos")
    assert rfc3339_nanos(digits) == rfc3339_nanos("2026-01-01T00:00:00.111111111Z")
    assert parse_rfc3339(digits) == parse_rfc3339("2026-01-01T00:00:00.111111Z")
