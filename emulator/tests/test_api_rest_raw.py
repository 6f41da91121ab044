"""Plain HTTP against the emulator, as curl would send it: the v1 REST mapping, the Google JSON
error shape, the web access and job pages, and the admin endpoints (stats, faults)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, wait_for_state


def http(em: Emulator, method: str, path: str, body: Any = None) -> tuple[int, Any, str]:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(em.rest_endpoint + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, raw, ctype = response.status, response.read(), response.headers["Content-Type"]
    except urllib.error.HTTPError as err:
        status, raw, ctype = err.code, err.read(), err.headers["Content-Type"]
    text = raw.decode()
    return status, (json.loads(text) if ctype.startswith("application/json") else text), ctype


def test_curl_style_crud(emulator: Emulator) -> None:
    body = container_job("curl", "import time; time.sleep(60)", labels={"via": "curl"})
    status, job, _ = http(emulator, "POST", f"/v1/{PARENT}/customJobs", body)
    assert status == 200, job
    name = job["name"]
    assert name.startswith(f"{PARENT}/customJobs/") and job["state"].startswith("JOB_STATE_")
    assert job["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] == "1"  # int64 as a JSON string

    status, got, _ = http(emulator, "GET", f"/v1/{name}")
    assert status == 200 and got["labels"] == {"via": "curl"}
    # What the stock REST client sends: enums come back as numbers.
    status, numeric, _ = http(emulator, "GET", f"/v1/{name}?%24alt=json%3Benum-encoding%3Dint")
    assert isinstance(numeric["state"], int) and 1 <= numeric["state"] <= 3

    status, listed, _ = http(emulator, "GET", f"/v1/{PARENT}/customJobs?filter=labels.via%3Dcurl&pageSize=10")
    assert status == 200 and [j["name"] for j in listed["customJobs"]] == [name]
    status, listed, _ = http(emulator, "GET", f"/v1/{PARENT}/customJobs?filter=labels.via%3Dother")
    assert status == 200 and listed == {}
    status, masked, _ = http(emulator, "GET", f"/v1/{PARENT}/customJobs?readMask=displayName,state")
    assert set(masked["customJobs"][0]) == {"displayName", "state"}

    status, refused, _ = http(emulator, "DELETE", f"/v1/{name}")
    assert status == 400 and refused["error"]["status"] == "FAILED_PRECONDITION"

    status, empty, _ = http(emulator, "POST", f"/v1/{name}:cancel", {})
    assert (status, empty) == (200, {})
    wait_for_state(emulator, name, {"JOB_STATE_CANCELLED"}, timeout=30)
    status, op, _ = http(emulator, "DELETE", f"/v1/{name}")
    assert status == 200 and op["done"] is True
    assert op["name"].startswith(f"{PARENT}/operations/")
    assert op["metadata"]["@type"].endswith("google.cloud.aiplatform.v1.DeleteOperationMetadata")
    assert op["response"]["@type"].endswith("google.protobuf.Empty")

    status, err, ctype = http(emulator, "GET", f"/v1/{name}")
    assert status == 404 and ctype.startswith("application/json")
    assert err["error"]["code"] == 404 and err["error"]["status"] == "NOT_FOUND"
    assert name in err["error"]["message"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code", "fragment"),
    [
        (
            "POST",
            f"/v1/{PARENT}/customJobs",
            {"displayName": "x", "bogus": 1},
            400,
            "INVALID_ARGUMENT",
            "bogus",
        ),
        ("POST", f"/v1/{PARENT}/customJobs", b"{not json", 400, "INVALID_ARGUMENT", "Invalid JSON payload"),
        (  # a spec rule: the project's "path: rule" line, as the operators and the CLI show it
            "POST",
            f"/v1/{PARENT}/customJobs",
            {
                "displayName": "x",
                "jobSpec": {
                    "workerPoolSpecs": [
                        {
                            "machineSpec": {"machineType": "n1-standard-4"},
                            "replicaCount": "2",
                            "containerSpec": {"imageUri": "python:3.11"},
                        }
                    ]
                },
            },
            400,
            "INVALID_ARGUMENT",
            "1.Field: job_spec.worker_pool_specs[0].replica_count; Message: worker pool 0 holds the primary",
        ),
        ("GET", f"/v1/{PARENT}/customJobs?filter=state%3DDONE", None, 400, "INVALID_ARGUMENT", "JOB_STATE_"),
        ("GET", f"/v1/{PARENT}/customJobs?pageSize=-1", None, 400, "INVALID_ARGUMENT", "page_size"),
        ("GET", f"/v1/{PARENT}/customJobs?readMask=nope", None, 400, "INVALID_ARGUMENT", "read_mask"),
        ("GET", f"/v1/{PARENT}/customJobs/abc", None, 400, "INVALID_ARGUMENT", "NUMERIC_ID"),
        ("GET", f"/v1/{PARENT}/nasJobs", None, 501, "UNIMPLEMENTED", "not implemented by the emulator"),
        ("POST", f"/v1/{PARENT}/batchPredictionJobs/1:cancel", {}, 501, "UNIMPLEMENTED", "CustomJob"),
        ("GET", f"/v1/{PARENT}/trainingPipelines", None, 404, "NOT_FOUND", "no such"),
        ("PATCH", f"/v1/{PARENT}/customJobs/1", {}, 404, "NOT_FOUND", "no such"),
        ("GET", "/nowhere", None, 404, "NOT_FOUND", "no such resource"),
    ],
)
def test_errors_use_the_google_json_error_shape(
    emulator: Emulator, method: str, path: str, body: Any, status: int, code: str, fragment: str
) -> None:
    got_status, err, _ = http(emulator, method, path, body)
    assert got_status == status
    assert err["error"]["status"] == code and err["error"]["code"] == status
    assert fragment in err["error"]["message"]


def test_web_access_page_and_job_page(emulator: Emulator) -> None:
    code = "print('hello-from-<replica>', flush=True); import time; time.sleep(60)"
    body = container_job("web", code, workers=1, enableWebAccess=True)
    status, job, _ = http(emulator, "POST", f"/v1/{PARENT}/customJobs", body)
    name = job["name"]
    wait_for_state(emulator, name, {"JOB_STATE_RUNNING"}, timeout=30)
    deadline = time.monotonic() + 30
    while True:
        uris = http(emulator, "GET", f"/v1/{name}")[1].get("webAccessUris", {})
        view = http(emulator, "GET", f"/web/{name}/workerpool1-0?format=json")[1]
        if set(uris) == {"workerpool0-0", "workerpool1-0"} and "hello-from-<replica>" in "".join(
            view.get("logTail") or []
        ):
            break
        assert time.monotonic() < deadline, (uris, view)
        time.sleep(0.05)
    assert uris["workerpool1-0"] == f"{emulator.rest_endpoint}/web/{name}/workerpool1-0"
    assert view["replica"] == "workerpool1-0" and view["job_state"] == "JOB_STATE_RUNNING"

    with urllib.request.urlopen(uris["workerpool1-0"], timeout=10) as response:
        page = response.read().decode()
        assert response.headers["Content-Type"].startswith("text/html")
    assert "hello-from-&lt;replica&gt;" in page  # the log tail, escaped

    status, ui, ctype = http(emulator, "GET", f"/ui/{name}")
    assert status == 200 and ctype.startswith("text/html")
    assert "JOB_STATE_RUNNING" in ui and "workerpool1-0" in ui and "n1-standard-4" in ui
    assert http(emulator, "GET", f"/web/{name}/workerpool7-0")[0] == 404
    assert http(emulator, "GET", f"/ui/{PARENT}/customJobs/1")[0] == 404
    http(emulator, "POST", f"/v1/{name}:cancel", {})
    wait_for_state(emulator, name, {"JOB_STATE_CANCELLED"}, timeout=30)


def test_stats_count_cancel_calls_per_job(emulator: Emulator) -> None:
    """Every Cancel that reached a job is counted under its name, accepted or refused as ended."""
    names = []
    for display_name, code in (("cancel-a", "import time; time.sleep(60)"), ("cancel-b", "pass")):
        status, job, _ = http(emulator, "POST", f"/v1/{PARENT}/customJobs", container_job(display_name, code))
        assert status == 200, job
        names.append(job["name"])
    a, b = names
    wait_for_state(emulator, b, {"JOB_STATE_SUCCEEDED"}, timeout=60)
    assert http(emulator, "POST", f"/v1/{a}:cancel", {})[0] == 200
    wait_for_state(emulator, a, {"JOB_STATE_CANCELLED"}, timeout=30)
    assert http(emulator, "POST", f"/v1/{a}:cancel", {})[0] == 400  # already ended: still a call
    assert http(emulator, "POST", f"/v1/{b}:cancel", {})[0] == 400
    assert http(emulator, "POST", f"/v1/{PARENT}/customJobs/12345:cancel", {})[0] == 404  # no job: none
    status, stats, _ = http(emulator, "GET", "/emulator/stats")
    assert status == 200
    assert {name: n for name, n in stats["cancel_calls"].items() if name in names} == {a: 2, b: 1}
    assert f"{PARENT}/customJobs/12345" not in stats["cancel_calls"]


def test_stats_and_runtime_faults(emulator: Emulator) -> None:
    http(emulator, "GET", f"/v1/{PARENT}/customJobs")
    http(emulator, "GET", f"/v1/{PARENT}/customJobs")
    http(emulator, "GET", f"/v1/{PARENT}/customJobs/1")
    status, stats, _ = http(emulator, "GET", "/emulator/stats")
    assert status == 200
    assert stats["calls"] == {"ListCustomJobs": 2, "GetCustomJob": 1}
    assert emulator.call_counts() == stats["calls"]

    status, faults, _ = http(emulator, "GET", "/emulator/faults")
    assert status == 200 and faults["error_rate"] == {} and faults["error_codes"] == ["UNAVAILABLE"]
    change = {"error_rate": {"GetCustomJob": 1.0}, "error_codes": ["RESOURCE_EXHAUSTED"], "seed": 7}
    status, faults, _ = http(emulator, "PUT", "/emulator/faults", change)
    assert status == 200 and faults["error_rate"] == {"GetCustomJob": 1.0} and faults["seed"] == 7
    assert emulator.config.faults.error_codes == ["RESOURCE_EXHAUSTED"]
    status, err, _ = http(emulator, "GET", f"/v1/{PARENT}/customJobs/1")
    assert status == 429 and err["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert "injected fault" in err["error"]["message"]
    assert http(emulator, "GET", f"/v1/{PARENT}/customJobs")[0] == 200  # other methods unaffected

    for bad, fragment in [
        ({"error_rate": {"GetCustomJob": 2}}, "error_rate.GetCustomJob: must be between 0 and 1"),
        ({"error_codes": ["NOPE"]}, "error_codes[0]: unknown status code 'NOPE'"),
        ({"latency": 1}, "latency: unknown fault setting"),
        ({"crash_exit_code": 0}, "crash_exit_code"),
    ]:
        status, err, _ = http(emulator, "PUT", "/emulator/faults", bad)
        assert status == 400 and fragment in err["error"]["message"], err
    assert emulator.config.faults.error_rate == {"GetCustomJob": 1.0}  # a bad PUT changes nothing
    status, stats, _ = http(emulator, "GET", "/emulator/stats")
    assert stats["injected_faults"] == {"GetCustomJob": 1}
