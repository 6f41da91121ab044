"""Every parser of the emulator is linear or bounded: adversarial input of a size costs at most a
small multiple of benign input of the same size (ratios, never absolute wall-clock goals), and input
past a bound is a 4xx / INVALID_ARGUMENT naming the field.

Parsers: the JSON depth guard of REST bodies (server/jsonlimits.py), the JobService List filter
(jobservice/filters.py, with its ``create_time`` values), List page tokens (jobservice/page_tokens.py),
the Cloud Logging filter of ``entries.list`` (cloud_logging/query.py: at most 20,000 characters, Cloud
Logging's own limit, 64
nested groups and 100 comparisons and search terms, the ``=`` values of one field joined by OR
counting once; tested as a request runs it, over 5,000 entries) and RFC 3339 times (core/timefmt.py: any
number of fraction digits, one scan). The log lines entries.list reads back are in
test_emulator_log_records.py, Cloud Storage's resources in test_emulator_storage_data.py.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable

import pytest
from google.api_core import exceptions
from hypothesis import given, settings
from hypothesis import strategies as st
from logging_support import gapic
from probes import JOBS, JSON, PARENT, RATIO, SLACK_S, Http, answer, assert_linear, best_of, record

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.cloud_logging.entries import JobMeta, replica_line_entry
from vertex_emulator.cloud_logging.query import MAX_DEPTH as MAX_LOG_DEPTH
from vertex_emulator.cloud_logging.query import MAX_FILTER_CHARS as MAX_LOG_FILTER_CHARS
from vertex_emulator.cloud_logging.query import MAX_TERMS as MAX_LOG_TERMS
from vertex_emulator.cloud_logging.query import LogFilterError, parse_log_filter
from vertex_emulator.core.timefmt import parse_rfc3339, rfc3339_nanos
from vertex_emulator.jobservice.filters import MAX_TERMS, FilterError, compile_filter
from vertex_emulator.jobservice.page_tokens import MAX_TOKEN_CHARS, TokenError, decode_token, encode_token
from vertex_emulator.server.jsonlimits import json_depth

# -- the JSON depth guard ---------------------------------------------------------------------------

SIZE = 64 * 1024


def benign_json(size: int) -> bytes:
    """A realistic body of ``size`` bytes: a job with many short arguments."""
    args, out = [], 0
    while out < size:
        args.append(f"--flag-{len(args)}=value")
        out += len(args[-1]) + 4
    return json.dumps({"displayName": "x", "args": args}).encode()[:size]


ADVERSARIAL_JSON = {
    # one unterminated string of escaped quotes: a backtracking regex scans to the end from each quote
    "escaped_quotes": b'{"a":"' + b'\\"' * (SIZE // 2),
    "quotes": b'{"a":' + b'"' * SIZE,
    "backslashes": b'{"a":"' + b"\\" * SIZE,
    "pairs": b"[]" * (SIZE // 2),
    "deep": b"[" * (SIZE // 2) + b"]" * (SIZE // 2),
    "layers": b"[[[]]]" * (SIZE // 6),
    "brackets_in_strings": b'["' + b"[{" * (SIZE // 2) + b'"]',
}


@pytest.mark.parametrize("kind", sorted(ADVERSARIAL_JSON))
def test_json_depth_is_linear(kind: str) -> None:
    raw, benign = ADVERSARIAL_JSON[kind], benign_json(SIZE)
    assert_linear(lambda: json_depth(raw, 64), lambda: json_depth(benign, 64), f"json_depth({kind})")


def _nested(draw: st.DrawFn, depth: int = 0) -> object:
    if depth > 10 or draw(st.booleans()):
        return draw(st.one_of(st.integers(), st.text(alphabet='[]{}"\\ab', max_size=6), st.none()))
    children = [_nested(draw, depth + 1) for _ in range(draw(st.integers(0, 3)))]
    if draw(st.booleans()):
        return children
    return {f"k{i}": child for i, child in enumerate(children)}


def reference_depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(reference_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(reference_depth, value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.composite(_nested)())
def test_json_depth_agrees_with_the_parsed_value(value: object) -> None:
    assert json_depth(json.dumps(value).encode()) == reference_depth(value)


def test_escaped_quotes_body_is_answered_while_others_are_served(emulator: Emulator, web: Http) -> None:
    body = b'{"a":"' + b'\\"' * (29 * 1024)  # the 58 KiB body that froze every listener for 9-10 s
    benign = benign_json(len(body))
    status, data = web.request("POST", JOBS, body, JSON)
    assert status == 400 and data["error"]["status"] == "INVALID_ARGUMENT", data
    # both timed as the best of three round trips (the server works in threads of its own, so no
    # thread's CPU clock measures it): one neighbour's burst on a loaded machine cannot fail the test,
    # while the freeze it guards against (9-10 s every time) still would
    seconds = best_of(lambda: web.request("POST", JOBS, body, JSON))
    benign_s = best_of(lambda: web.request("POST", JOBS, benign, JSON))
    assert seconds <= RATIO * benign_s + SLACK_S, (seconds, benign_s)
    record(
        "escaped_quotes_body",
        'POST of a 58 KiB body {"a":"\\"\\"\\"… (an unterminated string of escaped quotes)',
        f"{answer(status, data)} in {seconds * 1000:.0f} ms (was 7.8 s in the depth guard alone)",
    )


# -- List filters -----------------------------------------------------------------------------------

JOBS_FOR_FILTERS = [
    {"displayName": f"job-{i}", "state": "JOB_STATE_SUCCEEDED", "createTime": "2026-01-01T00:00:00Z"}
    for i in range(200)
]


def evaluate(text: str) -> int:
    """Compile a filter and run it over 200 jobs (a refused filter costs its parse only)."""
    try:
        predicate = compile_filter(text)
    except FilterError:
        return -1
    return sum(1 for job in JOBS_FOR_FILTERS if predicate(job))


def same_size(text: str) -> str:
    return 'display_name="' + "x" * max(0, len(text) - 16) + '"'


ADVERSARIAL_FILTERS = {
    "or_terms": " OR ".join(f"display_name=job-{i}x" for i in range(1500)),
    "fraction_digits": "create_time>2021-01-01T00:00:00." + "1" * 30_000 + "Z",
    "escapes": 'display_name="' + "\\a" * 15_000 + '"',
    "wildcards": 'display_name:"' + "*j" * 15_000 + '"',
    "negations": "NOT " * 7_000 + "state=JOB_STATE_RUNNING",
    "huge": "create_time>2021-01-01T00:00:00." + "1" * 400_000 + "Z",
}


@pytest.mark.parametrize("kind", sorted(ADVERSARIAL_FILTERS))
def test_filters_cost_no_more_than_benign_ones_of_their_size(kind: str) -> None:
    text = ADVERSARIAL_FILTERS[kind]
    benign = same_size(text)
    assert_linear(lambda: evaluate(text), lambda: evaluate(benign), f"filter {kind}")


def test_filter_bounds_are_invalid_argument_naming_them(emulator: Emulator) -> None:
    client = testing.grpc_client(emulator)
    cases = {
        "create_time": ("create_time>2021-01-01T00:00:00." + "1" * 400_000 + "Z", "characters"),
        "terms": (" OR ".join(["state=JOB_STATE_RUNNING"] * (MAX_TERMS + 1)), f"more than {MAX_TERMS}"),
        "digits": ("create_time>2021-01-01T00:00:00." + "1" * 30 + "Z", "at most 9 fraction digits"),
    }
    for key, (text, words) in cases.items():
        started = time.perf_counter()
        with pytest.raises(exceptions.InvalidArgument, match=words) as info:
            list(client.list_custom_jobs(request={"parent": PARENT, "filter": text}))
        seconds = time.perf_counter() - started
        assert len(info.value.message) < 2000  # the filter is quoted in part, not echoed whole
        if key == "create_time":
            record(
                "fraction_digits_filter",
                "ListCustomJobs over gRPC, filter create_time>…T00:00:00.<400,000 digits>Z",
                f"{info.value.grpc_status_code.name} in {seconds * 1000:.0f} ms (was: accepted)",
            )
        if key == "terms":
            record(
                "or_terms_filter",
                f"List filter of {MAX_TERMS + 1} OR terms",
                f"{info.value.grpc_status_code.name} (at most {MAX_TERMS} restrictions; was: accepted)",
            )
    at_limit = " OR ".join(["state=JOB_STATE_RUNNING"] * MAX_TERMS)
    assert list(client.list_custom_jobs(request={"parent": PARENT, "filter": at_limit})) is not None


# -- page tokens ------------------------------------------------------------------------------------


def token_of(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


BAD_TOKENS = {
    "deep": token_of(b"[" * 100_000 + b"]" * 100_000),
    "deep_object": token_of(b'{"p":' * 50_000 + b"1" + b"}" * 50_000),
    "list": token_of(b"[]"),
    "numbers": token_of(json.dumps({"p": 1, "f": 2, "t": 3, "n": 4}).encode()),
    "extra_keys": token_of(json.dumps({"p": PARENT, "f": "", "t": "a", "n": "b", "x": "c"}).encode()),
    "not_base64": "%%%",
    "huge": "A" * 2_000_000,
}


@pytest.mark.parametrize("kind", sorted(BAD_TOKENS))
def test_bad_page_tokens_are_refused_in_linear_time(kind: str) -> None:
    token = BAD_TOKENS[kind]
    size = min(len(token), MAX_TOKEN_CHARS * 3 // 4 - 500)  # a good token as long, or the longest
    good = encode_token(("2026-01-01T00:00:00Z", "x" * size), PARENT, "")

    def bad() -> None:
        with pytest.raises(TokenError, match="page_token"):
            decode_token(token, PARENT, "")

    assert_linear(bad, lambda: decode_token(good, PARENT, ""), f"page token {kind}")


def test_deep_page_tokens_are_invalid_argument_not_internal(emulator: Emulator, web: Http) -> None:
    token = token_of(b"[" * 20_000 + b"]" * 20_000)  # within the 64 KiB a REST URL may have
    with pytest.raises(exceptions.InvalidArgument, match="page_token"):
        testing.grpc_client(emulator).list_custom_jobs(request={"parent": PARENT, "page_token": token})
    status, data = web.request("GET", f"{JOBS}?pageToken={token}")
    assert status == 400 and "page_token" in data["error"]["message"], data
    record(
        "deep_page_token",
        "List with a page token of 20,000 nested brackets (base64), REST and gRPC",
        f"{answer(status, data)} / INVALID_ARGUMENT (was 500 / INTERNAL)",
    )


# -- /emulator/faults -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"latency_s": NaN}', "latency_s"),
        (b'{"latency_s": Infinity}', "latency_s"),
        (b'{"queued_s": -Infinity}', "queued_s"),
        (b'{"error_rate": {"*": NaN}}', "error_rate.*"),
    ],
)
def test_faults_must_be_finite(emulator: Emulator, web: Http, body: bytes, field: str) -> None:
    status, data = web.request("PUT", "/emulator/faults", body, JSON)
    assert status == 400 and data["error"]["message"].startswith(field), data
    status, faults = web.request("GET", "/emulator/faults")
    assert status == 200 and faults["latency_s"] == 0.0 and faults["error_rate"] == {}, faults
    if field == "latency_s" and b"NaN" in body:
        record(
            "nan_faults",
            'PUT /emulator/faults {"latency_s": NaN}',
            f"{answer(status=400, data=data)} naming latency_s (was 200, then every call failed)",
        )


# -- Cloud Logging filters (entries.list) ------------------------------------------------------------

LOG_META = JobMeta(project=PARENT.split("/")[1], job_id="1000000000000000001", trial_id=None)
LOG_ENTRIES = [
    replica_line_entry(
        f"step {i}: loss=0.{i:04d} lr=0.001 throughput=1234.5 examples/s",
        "stderr" if i % 5 == 0 else "stdout",
        t=1_767_225_600_000_000_000 + i * 1000,
        insert_id=f"1.workerpool0-{i % 4}.{i:09d}",
        key=f"workerpool0-{i % 4}",
        meta=LOG_META,
    )
    for i in range(5000)
]


def read_log_entries(text: str) -> int:
    """What entries.list does per request: compile the filter (a refused one costs its parse only) and
    test 5,000 entries with it, each entry's field map fresh."""
    try:
        query = parse_log_filter(text)
    except LogFilterError:
        return -1
    return sum(1 for entry in LOG_ENTRIES if query.predicate(entry.fields()))


def same_size_log_filter(text: str) -> str:
    """A benign filter as long: one substring test of every line's message."""
    return 'jsonPayload.message:"' + "x" * max(0, len(text) - 22) + '"'


def _up_to(parts: Iterable[str], joiner: str, limit: int = MAX_LOG_FILTER_CHARS) -> str:
    """``parts`` joined while the filter stays within ``limit`` characters."""
    out = ""
    for part in parts:
        longer = part if not out else out + joiner + part
        if len(longer) > limit:
            break
        out = longer
    return out


_N = range(100_000)
ADVERSARIAL_LOG_FILTERS = {
    # thousands of terms, none deciding the entry before the last (refused past MAX_LOG_TERMS)
    "or_terms": _up_to((f"jsonPayload.message:w{i}" for i in _N), " OR "),
    "search_words": _up_to(("step" for _ in _N), " "),
    "has_star": _up_to((f"labels.k{i}:*" for i in _N), " OR "),
    "log_ids": _up_to((f'log_id("x{i}")' for i in _N), " OR "),
    "severities": _up_to(("severity>=CRITICAL" for _ in _N), " OR "),
    # the poller's filter at the size limit: ~770 job ids, one set lookup
    "job_ids": "resource.labels.job_id=("
    + _up_to((f'"{2 * 10**18 + i}"' for i in _N), " OR ", MAX_LOG_FILTER_CHARS - 30)
    + ")",
    "grouped_task_names": _up_to(
        ("(" * 60 + f"resource.labels.task_name=workerpool{i}-0" + ")" * 60 for i in _N), " OR "
    ),
    "escapes": 'jsonPayload.message:"' + "\\a" * 9_980 + '"',
    "wildcards": 'jsonPayload.message:"' + "*j" * 9_980 + '"',
    # just within MAX_LOG_TERMS: 90 substring tests of 200 characters each
    "has_values": _up_to(("jsonPayload.message:" + "*" * 200 for _ in _N), " "),
    "unterminated": '"' + "\\" * 19_990,
    "parentheses": "(" * 19_990,
    "nots": "NOT " * 4_990 + "step",
    "dashes": "- " * 9_990 + "step",
    "fraction_digits": 'timestamp>="2026-01-01T00:00:00.' + "1" * 19_950 + 'Z"',
    "numbers": "jsonPayload.step>" + "9" * 19_980,
    "comments": "--\n" * 6_600 + "step",
    "long_field": "jsonPayload." + "a." * 9_980 + "a=1",
}


@pytest.mark.parametrize("kind", sorted(ADVERSARIAL_LOG_FILTERS))
def test_log_filters_cost_no_more_than_benign_ones_of_their_size(kind: str) -> None:
    text = ADVERSARIAL_LOG_FILTERS[kind]
    assert len(text) <= MAX_LOG_FILTER_CHARS
    benign = same_size_log_filter(text)
    assert read_log_entries(benign) == 0
    assert_linear(lambda: read_log_entries(text), lambda: read_log_entries(benign), f"log filter {kind}")


def test_log_filter_terms_are_counted_after_merging_one_fields_values() -> None:
    """The log poller's filter names up to 300 jobs as OR'd job_id terms: one set lookup, one term."""
    assert parse_log_filter(ADVERSARIAL_LOG_FILTERS["job_ids"]).cost == 1
    ids = " OR ".join(f'resource.labels.job_id="{2 * 10**18 + i}"' for i in range(300))
    assert parse_log_filter(ids).cost == 1 and read_log_entries(ids) == 0
    assert read_log_entries(f"{ids} OR resource.labels.job_id={LOG_META.job_id}") == len(LOG_ENTRIES)
    assert read_log_entries(ADVERSARIAL_LOG_FILTERS["grouped_task_names"]) == len(LOG_ENTRIES) // 4
    at_limit = " OR ".join(f"jsonPayload.message:w{i}" for i in range(MAX_LOG_TERMS))
    assert parse_log_filter(at_limit).cost == MAX_LOG_TERMS
    with pytest.raises(LogFilterError, match=f"more than {MAX_LOG_TERMS}"):
        parse_log_filter(f"{at_limit} OR step")


LOGS = "/v2/entries:list"


def test_log_filter_bounds_are_invalid_argument_naming_the_filter(emulator: Emulator, web: Http) -> None:
    resource = f"projects/{LOG_META.project}"
    cases = {
        "characters": ("step " * 4_001, f"at most {MAX_LOG_FILTER_CHARS} characters"),
        "terms": (ADVERSARIAL_LOG_FILTERS["or_terms"], f"more than {MAX_LOG_TERMS}"),
        "depth": ("(" * 100 + "step" + ")" * 100, f"more than {MAX_LOG_DEPTH} nested"),
        "fraction": ('timestamp>="2026-01-01T00:00:00.' + "1" * 400_000 + 'Z"', "characters"),
    }
    logging_client = gapic(emulator)
    for key, (text, words) in cases.items():
        started = time.perf_counter()
        with pytest.raises(exceptions.InvalidArgument, match=words) as info:
            logging_client.list_log_entries(request={"resource_names": [resource], "filter": text})
        seconds = time.perf_counter() - started
        assert info.value.message.startswith("filter: ") and len(info.value.message) < 2000
        body = json.dumps({"resourceNames": [resource], "filter": text}).encode()
        status, data = web.request("POST", LOGS, body, JSON)
        assert status == 400 and data["error"]["message"].startswith("filter: "), (status, data)
        if key == "terms":
            record(
                "log_filter_terms",
                f"entries.list with a filter of {text.count(' OR ') + 1} OR'd substring terms "
                f"({len(text):,} characters), gRPC and REST",
                f"INVALID_ARGUMENT (gRPC) / {answer(status, data)} (REST) naming filter, in "
                f"{seconds * 1000:.0f} ms "
                "(was: accepted, then 11 s to test 5,000 lines)",
            )


# -- RFC 3339 times ---------------------------------------------------------------------------------


def test_rfc3339_fraction_digits_are_read_in_linear_time() -> None:
    """timefmt reads every RFC 3339 value the emulator parses (a Logging filter's timestamp, a List
    filter's create_time once within its 40 characters, the store's own times): any number of
    fraction digits, the first 9 kept, scanned in one pass."""
    digits = "2026-01-01T00:00:00." + "1" * 400_000 + "Z"
    benign = " " * (len(digits) - 20) + "2026-01-01T00:00:00Z"
    assert_linear(lambda: rfc3339_nanos(digits), lambda: rfc3339_nanos(benign), "rfc3339_nanos")
    assert rfc3339_nanos(digits) == rfc3339_nanos("2026-01-01T00:00:00.111111111Z")
    assert parse_rfc3339(digits) == parse_rfc3339("2026-01-01T00:00:00.111111Z")
