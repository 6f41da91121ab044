"""Denial of service: what one request may cost the emulator, over REST and gRPC.

Wildcard filters match in linear time; a body is bounded by its ``Content-Length`` before it is read
(413); JSON, filter and proto nesting are bounded; every bad request is a 4xx / INVALID_ARGUMENT,
never a 5xx / INTERNAL (which clients retry as transient); a burst of 50 Creates is answered.
"""

from __future__ import annotations

import json
import re
import threading
import time

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from probes import JOBS, JSON, PARENT, Http, answer, assert_linear, job_bytes, job_count, record

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.jobservice.filters import MAX_DEPTH, FilterError, compile_filter
from vertex_emulator.jobservice.grpc_server import MAX_MESSAGE_BYTES, SERVICE_NAME
from vertex_emulator.rest import MAX_BODY_BYTES, MAX_JSON_DEPTH, json_depth


def test_wildcard_filters_run_in_linear_time(emulator: Emulator) -> None:
    client = testing.grpc_client(emulator)
    from google.cloud.aiplatform_v1 import CustomJob

    client.create_custom_job(
        parent=PARENT, custom_job=CustomJob.from_json(json.dumps(testing.container_job("a" * 40)))
    )
    # Nine wildcards and no final "b": a backtracking regex tries ~40^9/9! splits (10 s and more).
    small = 'display_name:"' + "*a" * 9 + '*b"'
    assert list(client.list_custom_jobs(request={"parent": PARENT, "filter": small})) == []
    big = 'display_name:"' + "*a" * 2000 + '*b"'
    started = time.perf_counter()
    assert list(client.list_custom_jobs(request={"parent": PARENT, "filter": big})) == []
    seconds = time.perf_counter() - started  # for the table; the bound is the ratio below
    # matching, timed in this thread: no more than a filter of the same length without wildcards
    (job,) = emulator.store.list("customJobs", PARENT)
    for wild in (small, big):
        plain = 'display_name:"' + "a" * (len(wild) - 15) + '"'
        assert len(plain) == len(wild)
        assert_linear(
            lambda wild=wild: compile_filter(wild)(job),
            lambda plain=plain: compile_filter(plain)(job),
            f"{wild.count('*')} wildcards",
        )
    record(
        "wildcard_filter",
        'List filter display_name:"*a*a…*b" (2,000 wildcards) over a 40-character name',
        f"empty page in {seconds * 1000:.0f} ms",
    )


def reference_glob(pattern: str, name: str) -> bool:
    regex = "".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern))
    return re.fullmatch(regex, name, re.DOTALL) is not None


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.text(alphabet="ab*", max_size=8), st.text(alphabet="ab", max_size=8))
def test_wildcard_matching_agrees_with_a_regex(pattern: str, name: str) -> None:
    quoted = pattern.replace("\\", "\\\\").replace('"', '\\"')
    predicate = compile_filter(f'display_name:"{quoted}"')
    assert predicate({"displayName": name}) == reference_glob(pattern, name), (pattern, name)


def test_deep_filters_are_invalid_argument(emulator: Emulator, web: Http) -> None:
    deep = "(" * 3000 + "state=JOB_STATE_RUNNING" + ")" * 3000
    status, data = web.request("GET", f"{JOBS}?filter={deep}")
    assert status == 400 and "nested deeper than" in data["error"]["message"], data
    record("deep_filter_rest", "List over REST, filter of 3,000 nested parentheses", answer(status, data))
    from google.api_core import exceptions

    with pytest.raises(exceptions.InvalidArgument, match="nested deeper than") as info:
        list(testing.grpc_client(emulator).list_custom_jobs(request={"parent": PARENT, "filter": deep}))
    record("deep_filter_grpc", "ListCustomJobs over gRPC, the same filter", info.value.grpc_status_code.name)
    at_limit = "(" * MAX_DEPTH + "state=JOB_STATE_RUNNING" + ")" * MAX_DEPTH
    compile_filter(at_limit)
    with pytest.raises(FilterError):
        compile_filter("(" + at_limit + ")")


def test_an_oversized_body_is_refused_before_it_is_read(emulator: Emulator, web: Http) -> None:
    """Content-Length says 50 MB and nothing follows: the answer comes at once, not after a read."""
    size = 50 * 1000 * 1000
    started = time.perf_counter()
    status, data = web.request("POST", JOBS, b"", {**JSON, "Content-Length": str(size)}, timeout=10)
    seconds = time.perf_counter() - started
    assert status == 413 and data["error"]["status"] == "INVALID_ARGUMENT", data
    assert str(MAX_BODY_BYTES) in data["error"]["message"]  # answered, with nothing read: had the
    # server waited for the 50 MB, the request would have timed out (10 s) instead of returning
    record(
        "huge_body",
        "POST customJobs with Content-Length: 50,000,000",
        f"{answer(status, data)} in {seconds * 1000:.0f} ms, body not read",
    )
    body = b'{"displayName": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}'  # really sent: still answered
    status, data = web.request("POST", JOBS, body, JSON)
    assert status == 413, data


@pytest.mark.parametrize(
    ("key", "what", "body"),
    [
        ("deep_json_array", "POST customJobs, body '[' x 100,000", b"[" * 100_000),
        ("deep_json_object", "POST customJobs, body '{\"a\":' x 5,000", b'{"a":' * 5000 + b"1" + b"}" * 5000),
    ],
)
def test_deeply_nested_json_is_a_client_error(web: Http, key: str, what: str, body: bytes) -> None:
    status, data = web.request("POST", JOBS, body, JSON)
    assert status == 400 and data["error"]["status"] == "INVALID_ARGUMENT", data
    assert "nested" in data["error"]["message"]
    record(key, what, answer(status, data))


def test_json_depth_counts_only_structure() -> None:
    assert json_depth(b'{"a": [1, {"b": "[[[[{{{{"}], "c": "\\"]]]"}') == 3
    assert json_depth(b"[" * (MAX_JSON_DEPTH + 1)) == MAX_JSON_DEPTH + 1
    assert json_depth(b'"[[["') == 0


def raw_grpc(em: Emulator, method: str, payload: bytes) -> grpc.RpcError:
    with grpc.insecure_channel(
        em.grpc_target, options=[("grpc.max_send_message_length", 128 * 1024 * 1024)]
    ) as channel:
        call = channel.unary_unary(f"/{SERVICE_NAME}/{method}")
        with pytest.raises(grpc.RpcError) as info:
            call(payload, timeout=30)
    error: grpc.RpcError = info.value
    return error


def test_grpc_bad_bytes_are_invalid_argument(emulator: Emulator) -> None:
    # An unknown group field (number 99) opened 5,000 times: the proto parser's recursion limit.
    deep = b"\xdb\x06" * 5000 + b"\xdc\x06" * 5000
    error = raw_grpc(emulator, "CreateCustomJob", deep)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    record("deep_proto", "CreateCustomJob over gRPC, a group nested 5,000 deep", error.code().name)
    error = raw_grpc(emulator, "CreateCustomJob", b"\xff\xff\xff")
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error


def test_grpc_oversized_messages_are_invalid_argument(emulator: Emulator) -> None:
    from google.cloud.aiplatform_v1 import CreateCustomJobRequest

    request = CreateCustomJobRequest(
        parent=PARENT, custom_job={"display_name": "x" * (MAX_MESSAGE_BYTES + 10)}
    )
    error = raw_grpc(emulator, "CreateCustomJob", CreateCustomJobRequest.serialize(request))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    assert "exceeds the limit" in str(error.details())
    record(
        "huge_grpc_message",
        f"CreateCustomJob over gRPC, {MAX_MESSAGE_BYTES // 2**20} MiB + 10 bytes",
        error.code().name,
    )


def test_grpc_refuses_messages_past_its_transport_limit(emulator: Emulator) -> None:
    error = raw_grpc(emulator, "CreateCustomJob", b"\x0a" + b"\x80\x80\x80\x21" + b"x" * (65 * 2**20))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error


def test_fifty_parallel_creates_are_all_answered(emulator: Emulator, web: Http) -> None:
    count = 50
    barrier = threading.Barrier(count)
    results: list[int | str] = [0] * count

    def create(i: int) -> None:
        barrier.wait()
        try:
            results[i] = web.request("POST", JOBS, job_bytes(f"burst-{i}"), JSON, timeout=60)[0]
        except OSError as exc:
            results[i] = type(exc).__name__

    before = job_count(emulator)
    started = time.perf_counter()
    threads = [threading.Thread(target=create, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    seconds = time.perf_counter() - started
    assert results == [200] * count
    assert job_count(emulator) == before + count
    record(
        "parallel_creates",
        "50 Creates over REST at once, one connection each",
        f"{results.count(200)}/50 answered 200 in {seconds:.1f} s",
    )
