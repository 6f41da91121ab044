"""The facts both distributions hold, each in a copy of its own because the wire separates them
(docs/architecture.md, "Copies across the wire"): each pair agrees, and where Google ships the fact as a
proto or a library, the copies agree with it too. A copy that drifts fails here, not in a user's job."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st


def test_log_severities_are_the_proto_enum_on_both_sides() -> None:
    from google.logging.type.log_severity_pb2 import LogSeverity

    from airflow_vertex_dist.common.log_severity import SEVERITIES as provider
    from vertex_emulator.core.jobkinds import SEVERITIES as emulator

    assert provider == emulator == dict(LogSeverity.items())


def test_job_states_are_names_of_the_proto_enum_and_end_alike() -> None:
    from google.cloud.aiplatform_v1.types.job_state import JobState

    from airflow_vertex_dist.jobs.kinds import ACTIVE_STATES, TERMINAL_STATES
    from vertex_emulator.core.jobkinds import TERMINAL_STATES as emulator_terminal

    names = {state.name for state in JobState}
    assert ACTIVE_STATES | TERMINAL_STATES <= names
    assert not ACTIVE_STATES & TERMINAL_STATES
    assert TERMINAL_STATES == emulator_terminal
    # every state a job can be in is known to the provider, but the proto's placeholder
    assert names - ACTIVE_STATES - TERMINAL_STATES == {"JOB_STATE_UNSPECIFIED"}


def test_output_only_fields_are_the_same_list() -> None:
    from airflow_vertex_dist.specs import _api as provider
    from vertex_emulator.jobservice import methods as emulator

    assert provider.CUSTOM_JOB_OUTPUT_ONLY == emulator.CUSTOM_JOB_OUTPUT_ONLY
    assert provider.TUNING_JOB_OUTPUT_ONLY == emulator.TUNING_JOB_OUTPUT_ONLY


def test_flex_start_accelerators_and_quota_metrics_are_the_same_reading() -> None:
    from airflow_vertex_dist.jobs.capacity_messages import QUOTA_SUFFIXES
    from airflow_vertex_dist.specs.job import FLEX_START_GPUS
    from vertex_emulator.capacity import gpus
    from vertex_emulator.rules.scheduling import FLEX_START_GPUS as emulator_flex

    assert FLEX_START_GPUS == emulator_flex
    assert QUOTA_SUFFIXES == gpus._SUFFIXES


_OFFSETS = st.sampled_from(["Z", "+00:00", "+05:30", "-08:00"])


@settings(max_examples=200, deadline=None)
@given(
    when=st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 30)),
    fraction=st.text(alphabet="0123456789", max_size=9),
    offset=_OFFSETS,
)
def test_both_time_readers_read_as_protobuf_does(when: datetime, fraction: str, offset: str) -> None:
    """protobuf's Timestamp JSON reader is the oracle of both RFC 3339 readers, to the nanosecond."""
    from google.protobuf.timestamp_pb2 import Timestamp

    from airflow_vertex_dist.common.rfc3339 import parse_rfc3339, rfc3339_nanos
    from vertex_emulator.core.timefmt import parse_rfc3339 as emulator_parse
    from vertex_emulator.core.timefmt import rfc3339_nanos as emulator_nanos

    text = when.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + offset
    oracle = Timestamp()
    oracle.FromJsonString(text)
    expected = oracle.seconds * 1_000_000_000 + oracle.nanos
    assert rfc3339_nanos(text) == emulator_nanos(text) == expected
    micros = oracle.ToDatetime(tzinfo=timezone.utc).replace(microsecond=int((fraction + "000000")[:6]))
    assert parse_rfc3339(text) == emulator_parse(text) == micros
