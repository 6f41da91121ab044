"""Every parser of the emulator is linear or bounded: adversarial input of a size costs at most a
small multiple of benign input of the same size (ratios, never absolute wall-clock goals), and input
past a bound is a 4xx / INVALID_ARGUMENT naming the field.

Parsers: the JSON depth guard of REST bodies (jsonlimits.py), the JobService List filter
(filters.py, with its ``create_time`` values) and List page tokens (page_tokens.py).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable

import pytest
from google.api_core import exceptions
from hypothesis import given, settings
from hypothesis import strategies as st

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.filters import MAX_TERMS, FilterError, compile_filter
from vertex_emulator.jsonlimits import json_depth
from vertex_emulator.page_tokens import MAX_TOKEN_CHARS, TokenError, decode_token, encode_token

from ._probes import JOBS, JSON, PARENT, Http, answer, record

#: adversarial <= RATIO x benign + SLACK_S: generous, for a loaded 2-core machine.
RATIO = 5.0
SLACK_S = 0.05


def best_of(run: Callable[[], object], times: int = 3) -> float:
    """The shortest of ``times`` runs, in seconds (the least disturbed by other processes)."""
    best = float("inf")
    for _ in range(times):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def assert_linear(adversarial: Callable[[], object], benign: Callable[[], object], what: str) -> float:
    bad, good = best_of(adversarial), best_of(benign)
    assert bad <= RATIO * good + SLACK_S, f"{what}: {bad:.3f} s against {good:.3f} s for benign input"
    return bad


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
    started = time.perf_counter()
    status, data = web.request("POST", JOBS, body, JSON)
    seconds = time.perf_counter() - started
    assert status == 400 and data["error"]["status"] == "INVALID_ARGUMENT", data
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
