"""The emulator's REST API under bad input: malformed JSON, wrong types, unknown fields, huge bodies,
names outside ``projects/*/locations/*`` and path tricks.

Every bad request gets a 4xx in Google's JSON error shape with a message; no 5xx; the emulator keeps
serving and its store stays consistent (List shows exactly the jobs the accepted Creates returned,
each readable by Get), and nothing is written outside its state dir.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from probes import Http

from vertex_emulator import testing
from vertex_emulator.app import Emulator

PARENT = "projects/fuzz/locations/us-central1"
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Client(Http):
    """The probes' raw HTTP client, keeping the name of every job an accepted Create returned."""

    def __init__(self, em: Emulator) -> None:
        super().__init__(em)
        self.created: list[str] = []

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> tuple[int, Any]:
        status, data = super().request(method, path, body, headers, timeout)
        if status == 200 and method == "POST" and path.endswith("/customJobs") and isinstance(data, dict):
            self.created.append(str(data["name"]))
        return status, data


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    root = tmp_path_factory.mktemp("rest-fuzz")
    with testing.running_emulator(root) as em:
        em.root = root  # type: ignore[attr-defined]
        yield em


@pytest.fixture(scope="module")
def client(emulator: Emulator) -> Client:
    return Client(emulator)


def assert_client_error(status: int, data: Any, what: str) -> None:
    assert 400 <= status < 500, f"{what}: HTTP {status} {data!r}"[:2000]
    assert isinstance(data, dict) and isinstance(data.get("error"), dict), f"{what}: {data!r}"[:2000]
    error = data["error"]
    assert error.get("code") == status and error.get("status") and str(error.get("message", "")).strip(), (
        error
    )


def good_job(name: str = "fuzz") -> dict[str, Any]:
    return testing.container_job(name, "pass")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def bad_bodies(draw: st.DrawFn) -> bytes:
    """Create bodies that must be refused: broken JSON, non-objects, wrong types, unknown fields."""
    kind = draw(st.sampled_from(["broken", "not-object", "wrong-type", "unknown-field", "bad-enum"]))
    if kind == "broken":
        text = json.dumps(good_job())
        cut = draw(st.integers(min_value=1, max_value=len(text) - 1))
        return (text[:cut] + draw(st.sampled_from(["", "{", "\x00", "\\", '"', "]]"]))).encode()
    if kind == "not-object":
        return json.dumps(draw(st.lists(JSON_VALUES, max_size=3) | st.integers() | st.text())).encode()
    body = good_job()
    if kind == "wrong-type":
        path = draw(
            st.sampled_from([("displayName",), ("jobSpec",), ("jobSpec", "workerPoolSpecs"), ("labels",)])
        )
        value = draw(st.sampled_from([[1, 2], {"x": {"y": 1}}, 3.5, True]))
        target = body
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    elif kind == "unknown-field":
        where = draw(st.sampled_from(["top", "jobSpec", "pool", "container"]))
        key = draw(st.from_regex(r"[a-z][A-Za-z]{2,10}", fullmatch=True).filter(lambda k: k not in KNOWN))
        target = {
            "top": body,
            "jobSpec": body["jobSpec"],
            "pool": body["jobSpec"]["workerPoolSpecs"][0],
            "container": body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"],
        }[where]
        target[key] = draw(JSON_VALUES)
    else:
        known = {"STRATEGY_UNSPECIFIED", "ON_DEMAND", "LOW_COST", "STANDARD", "SPOT", "FLEX_START"}
        name = draw(
            st.from_regex(r"[A-Za-z_][A-Za-z_ ]{0,11}", fullmatch=True).filter(lambda n: n not in known)
        )
        body["jobSpec"]["scheduling"] = {"strategy": name}
    return json.dumps(body).encode()


KNOWN = {
    # CustomJob, CustomJobSpec, WorkerPoolSpec, ContainerSpec field names (camel and snake)
    "name", "displayName", "jobSpec", "state", "createTime", "startTime", "endTime", "updateTime",
    "error", "labels", "encryptionSpec", "webAccessUris", "satisfiesPzs", "satisfiesPzi",
    "workerPoolSpecs", "scheduling", "serviceAccount", "network", "reservedIpRanges", "baseOutputDirectory",
    "protectedArtifactLocationId", "tensorboard", "enableWebAccess", "enableDashboardAccess", "experiment",
    "experimentRun", "models", "persistentResourceId", "pscInterfaceConfig", "containerSpec",
    "pythonPackageSpec", "machineSpec", "replicaCount", "nfsMounts", "lustreMounts", "diskSpec",
    "imageUri", "command", "args", "env", "display_name", "job_spec",
}  # fmt: skip


@SETTINGS
@given(body=bad_bodies())
def test_bad_create_bodies_are_client_errors(client: Client, body: bytes) -> None:
    status, data = client.request(
        "POST", f"/v1/{PARENT}/customJobs", body, {"Content-Type": "application/json"}
    )
    assert_client_error(status, data, f"POST {body[:200]!r}")


SEGMENTS = st.sampled_from(
    [
        "projects", "locations", "p", "l", "customJobs", "hyperparameterTuningJobs", "..", ".", "",
        "%2e%2e", "%2F", "%00", "a%2Fb", "x" * 300, "%C3%BC", ":cancel", "*", "projects/p", "..%2f..",
    ]
)  # fmt: skip


@SETTINGS
@given(
    segments=st.lists(SEGMENTS, min_size=0, max_size=7),
    method=st.sampled_from(["GET", "POST", "DELETE", "PUT", "PATCH"]),
)
def test_names_outside_the_grammar_are_client_errors(
    client: Client, segments: list[str], method: str
) -> None:
    path = "/v1/" + "/".join(segments)
    is_valid_collection = len(segments) == 5 and segments[0] == "projects" and segments[2] == "locations"
    body = json.dumps(good_job()).encode() if method == "POST" else b""
    status, data = client.request(method, path, body if method in ("POST", "PUT", "PATCH") else None)
    if status == 200:
        # only a well-formed JobService path may succeed
        assert segments[0] == "projects" and segments[2] == "locations", path
        assert is_valid_collection or len(segments) == 6, path
        return
    assert_client_error(status, data, f"{method} {path}")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/projects/p/customJobs",
        "/v1/projects/p/locations/l/customJobs/../../../../etc/passwd",
        "/v1/projects/p/locations/l/customJobs/%2e%2e%2f%2e%2e%2fstate",
        "/v1/projects/p/locations/l/customJobs/1%00",
        "/v1/projects/p/locations/l/customJobs/" + "9" * 5000,
        "/ui/projects/p/locations/l/customJobs/../../../../etc/passwd",
        "/web/projects/p/locations/l/customJobs/1/../../../../../etc/passwd",
        "/v1/projects/p/locations/l/customJobs/1:delete",
    ],
)
def test_path_tricks_are_client_errors(client: Client, path: str) -> None:
    status, data = client.request("GET", path)
    assert_client_error(status, data, path)
    assert "root:" not in json.dumps(data)


def test_huge_body_is_refused_and_the_emulator_stays_up(client: Client) -> None:
    body = good_job("huge")
    body["displayName"] = "x" * (32 * 1024 * 1024)
    status, data = client.request(
        "POST", f"/v1/{PARENT}/customJobs", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    assert_client_error(status, data, "32 MiB body")
    status, _ = client.request("GET", f"/v1/{PARENT}/customJobs")
    assert status == 200


def test_lying_content_length_is_refused(client: Client) -> None:
    """A Content-Length of a terabyte must not make the emulator wait for (or allocate) a terabyte."""
    status, data = client.request(
        "POST",
        f"/v1/{PARENT}/customJobs",
        b"{}",
        {"Content-Type": "application/json", "Content-Length": str(10**12)},
    )
    assert_client_error(status, data, "Content-Length 10**12")


def test_store_consistent_after_the_fuzzing(client: Client, emulator: Emulator) -> None:
    """Runs last in this module: what the accepted Creates returned is exactly what List shows."""
    for i in range(3):
        status, _ = client.request(
            "POST",
            f"/v1/{PARENT}/customJobs",
            json.dumps(good_job(f"after-{i}")).encode(),
            {"Content-Type": "application/json"},
        )
        assert status == 200
    listed: list[str] = []
    token = ""
    while True:
        status, data = client.request("GET", f"/v1/{PARENT}/customJobs?pageSize=100&pageToken={token}")
        assert status == 200, data
        listed += [j["name"] for j in data.get("customJobs", [])]
        token = data.get("nextPageToken", "")
        if not token:
            break
    assert sorted(listed) == sorted(n for n in client.created if n.startswith(PARENT))
    for name in client.created:
        status, data = client.request("GET", f"/v1/{name}")
        assert status == 200 and data["name"] == name
    root = emulator.root  # type: ignore[attr-defined]
    assert {p.name for p in Path(root).iterdir()} <= {"emulator-state", "gcs"}
    assert not list(Path(sys.prefix).glob("state*"))
