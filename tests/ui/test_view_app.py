"""The job view's FastAPI app against the emulator, through the provider's hooks: the page of a
CustomJob (pools, timeline, replicas with their log lines) and of a study (6 trials, 6 points, the
best marked); one Get and one log read per job per refresh interval, whatever the pages; a user the
auth dependency refuses gets 403 and nothing of the job."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi import HTTPException
from fastapi.testclient import TestClient
from google.cloud.aiplatform_v1 import CustomJob, HyperparameterTuningJob

from airflow_vertex_dist import _compat
from airflow_vertex_dist.hooks.labels import run_labels
from airflow_vertex_dist.links import OwnedJob
from airflow_vertex_dist.ui import app as ui_app
from airflow_vertex_dist.ui.app import JobCache, ReadWindow
from tests.emulator_suite import check_page
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, tuning_job, wait_for_state

URL = "/ti/dag_a/manual__1/train/-1"
#: the labels the provider writes on the job of the task instance of ``URL``: the view shows a job only
#: when they say it is that task instance's
URL_LABELS = run_labels("dag_a", "train", "manual__1", -1)


def _allow(request: Any = None) -> None:
    return None


def _deny(request: Any = None) -> None:
    raise HTTPException(403, "Forbidden")


def _client(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    *,
    allowed: bool = True,
    cache: JobCache | None = None,
    steps: list[dict[str, Any]] | None = None,
    returned: Any = None,
) -> TestClient:
    """The app, its task's job ``name`` (the rungs its ladder left, ``steps``, and the ledger it
    returned, ``returned``) as the task's XComs would give them
    (``tests/compat/test_ui_internals.py`` reads real XComs)."""
    monkeypatch.setattr(_compat, "ui_auth_dependencies", lambda: (_allow if allowed else _deny, _allow))
    monkeypatch.setattr(
        ui_app, "find_job", lambda *a: (OwnedJob(name, "vertex_dist_default"), "http://console/x")
    )
    monkeypatch.setattr(ui_app, "ladder_steps", lambda *a: list(steps or []))
    monkeypatch.setattr(ui_app, "ladder_walk", lambda *a: (list(steps or []), {}))
    monkeypatch.setattr(ui_app, "returned_ledger", lambda *a: returned)
    return TestClient(ui_app.create_app(cache))


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_custom_job_page_shows_pools_timeline_and_replica_lines(
    vertex_conn: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = testing.grpc_client(vertex_conn)
    code = "import sys; print('hello <from> replica'); print('bad thing', file=sys.stderr)"
    body = container_job("view <job>", code, workers=2)
    body["jobSpec"]["workerPoolSpecs"][1]["machineSpec"] = {
        "machineType": "n1-standard-8",
        "acceleratorType": "NVIDIA_TESLA_T4",
        "acceleratorCount": 2,
    }
    body["jobSpec"]["baseOutputDirectory"] = {"outputUriPrefix": "gs://bkt/out"}
    # the job of a capacity ladder's second rung (its label, as the ladder writes it), on Spot
    body["labels"] = {**(body.get("labels") or {}), **URL_LABELS, "airflow-rung": "r2"}
    body["jobSpec"]["scheduling"] = {"strategy": "SPOT"}
    job = client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body)))
    wait_for_state(client, job.name, ["JOB_STATE_SUCCEEDED"], timeout=120)

    response = _client(monkeypatch, job.name).get(URL)
    assert response.status_code == 200, response.text
    page = response.text
    check_page(page)
    assert "view &lt;job&gt;" in page and "<job>" not in page
    assert "JOB_STATE_SUCCEEDED" in page
    # the pools: role, machine, accelerators, replica count, image
    assert re.search(
        r"<td>workerpool1</td><td>workers</td><td>n1-standard-8</td><td>2 x NVIDIA_TESLA_T4</td>"
        r"<td>2</td><td>python:3.11</td>",
        page,
    )
    assert "<td>workerpool0</td><td>primary</td>" in page
    region = PARENT.split("/")[3]
    assert f"<p id='capacity-rung'>Capacity ladder: rung 2, SPOT, in {region}</p>" in page
    # the timeline, with durations
    assert "<td>created</td>" in page and "<td>running</td>" in page and "ended (SUCCEEDED)" in page
    # each replica, its lines at their severity
    for key in ("workerpool0-0", "workerpool1-0", "workerpool1-1"):
        assert f"data-replica='{key}'" in page
    assert re.search(r"<li class='sev-INFO' data-rank='200'>.*hello &lt;from&gt; replica</li>", page)
    assert re.search(r"<li class='sev-ERROR' data-rank='500'>.*bad thing</li>", page)
    # links: the job page, the task log, the output directory
    assert "href='http://console/x'" in page
    assert "href='/dags/dag_a/runs/manual__1/tasks/train'" in page
    assert "gs://bkt/out" in page
    assert "data-running='0'" in page and "<script src" not in page
    # the cost ledger, reckoned from the job (no ledger returned): 2 workers x 2 T4, on Spot; the
    # catalog has no T4 price and the job's log was not read for preemptions: both unknown
    ledger = page[page.index("<h2 id='ledger'>Cost ledger</h2>") : page.index("<h2>Pools</h2>")]
    row = re.search(
        r"<tr><td>rung 2</td><td>(\d+)</td><td>SPOT</td><td>4 x NVIDIA_TESLA_T4</td>(.*?)</tr>", ledger
    )
    assert row is not None and row.group(1) == job.name.rsplit("/", 1)[-1]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(2))
    assert cells[1] == "unknown" and cells[4] == "unknown"  # USD, lost to preemption
    assert re.fullmatch(r"\d+\.\d+", cells[0])  # GPU-hours
    assert "<tr class='total'><td>task</td><td colspan='3'>1 job</td>" in ledger
    assert "an upper bound" not in ledger  # no Spot price shown: nothing to qualify


def test_reads_are_shared_by_pages_and_spaced_by_the_refresh_interval(
    vertex_conn: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten page loads within one refresh interval cost one Get and one log read; the next interval
    one more of each; the log reads of all pages together stop at the per-minute window."""
    client = testing.grpc_client(vertex_conn)
    body = container_job("runs", "import time; print('up', flush=True); time.sleep(120)")
    body["labels"] = {**(body.get("labels") or {}), **URL_LABELS}
    job = client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body)))
    wait_for_state(client, job.name, ["JOB_STATE_RUNNING"], timeout=120)
    clock = _Clock()
    cache = JobCache(ttl_s=10, window=ReadWindow(3, clock), clock=clock)
    http = _client(monkeypatch, job.name, cache=cache)
    try:
        for _ in range(10):
            page = http.get(URL + "?fragment=1").text
        assert page.startswith("<main data-running='1'>")
        assert cache.calls == {"gets": 1, "log_reads": 1}
        clock.now += 10
        http.get(URL)
        assert cache.calls == {"gets": 2, "log_reads": 2}
        clock.now += 10
        http.get(URL)
        clock.now += 10
        page = http.get(URL).text  # a 4th read within 60 s: over the window of 3
        assert cache.calls == {"gets": 4, "log_reads": 3}
        assert "budget of 3 Cloud Logging reads a minute is spent" in page
    finally:
        client.cancel_custom_job(name=job.name)


def test_a_study_page_draws_six_points_and_marks_the_best(
    vertex_conn: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = testing.grpc_client(vertex_conn)
    code = (
        "import sys, hypertune; x = int(sys.argv[-1].split('=')[1]);"
        "h = hypertune.HyperTune();"
        "[h.report_hyperparameter_tuning_metric(hyperparameter_metric_tag='score',"
        " metric_value=x * s / (1 + (x - 4) ** 2), global_step=s) for s in (1, 2, 3)]"
    )
    body = tuning_job("study", code, max_trials=6, parallel=3)
    body["labels"] = {**(body.get("labels") or {}), **URL_LABELS}
    job = client.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=HyperparameterTuningJob.from_json(json.dumps(body))
    )
    wait_for_state(client, job.name, ["JOB_STATE_SUCCEEDED"], timeout=240)
    page = _client(monkeypatch, job.name).get(URL).text
    check_page(page)
    points = re.findall(r"<circle class='(trial(?: best)?)'", page)
    assert len(points) == 6 and points.count("trial best") == 1
    assert points[3] == "trial best"  # x = 4 has the highest score
    assert len(re.findall(r"<polyline class='trial-steps", page)) == 6  # a line of steps per trial
    assert "<tr class='best'><td>4</td>" in page
    assert "capacity-rung" not in page  # no ladder: no rung line
    # x is an INTEGER parameter: shown as the study defines it, not as the double the API carries
    assert "<td>x=4</td>" in page and "x=4.0" not in page


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("https://console.cloud.google.com/vertex-ai/x", "https://console.cloud.google.com/vertex-ai/x"),
        ("http://127.0.0.1:8080/ui/jobs/1", "http://127.0.0.1:8080/ui/jobs/1"),
        ("javascript:alert(document.cookie)", ""),
        (" JavaScript:alert(1)", ""),
        ("data:text/html,<script>alert(1)</script>", ""),
        ("//evil.example/x", ""),
        ("https:", ""),
        (None, ""),
        (42, ""),
    ],
)
def test_only_a_web_address_from_the_xcom_becomes_the_console_link(value: object, shown: str) -> None:
    """The console link is read from an XCom, which any task of the DAG may write."""
    from airflow_vertex_dist.ui.app import web_url

    assert web_url(value) == shown


def test_a_user_who_may_not_read_the_dag_gets_403_and_nothing(
    vertex_conn: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(ui_app, "read_log_view", lambda *a: calls.append("logs"))
    http = _client(monkeypatch, f"{PARENT}/customJobs/123", allowed=False)
    for url in (URL, URL + "?fragment=1"):
        response = http.get(url)
        assert response.status_code == 403 and "customJobs" not in response.text
    assert calls == []


def test_the_real_auth_dependencies_are_airflows() -> None:
    """The view depends on the API server's own ``requires_access_dag`` (TASK_INSTANCE, GET) and
    ``get_user``: what Airflow's REST API uses for the same question."""
    import inspect

    from airflow.api_fastapi.core_api.security import get_user

    read, user = _compat.ui_auth_dependencies()
    assert user is get_user
    assert read.__qualname__.startswith("requires_access_dag")
    assert set(inspect.signature(read).parameters) == {"request", "user"}


def test_the_uis_unfilled_map_index_is_the_task_that_is_not_mapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow's UI fills ``{MAP_INDEX}`` in a task-instance view's href on a mapped task's page only:
    on any other task's page the view's path ends in the placeholder itself (seen in the browser
    test), which is map index -1; an integer is that map index; anything else is no task instance."""
    seen: list[tuple[Any, ...]] = []
    monkeypatch.setattr(_compat, "ui_auth_dependencies", lambda: (_allow, _allow))
    monkeypatch.setattr(ui_app, "find_job", lambda *a: seen.append(a))  # no job: 404
    http = TestClient(ui_app.create_app())
    for path in ("%7BMAP_INDEX%7D", "-1", "3", "x", "-2", "{MAP_INDEX"):
        assert http.get(f"/ti/d/r/t/{path}").status_code == 404, path
    assert seen == [("d", "r", "t", -1), ("d", "r", "t", -1), ("d", "r", "t", 3)]
