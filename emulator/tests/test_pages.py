"""The emulator's pages: the index, ``/ui/`` (the address the banner prints; it answered 404) and ``/``:
every job, finished ones too, newest first, escaped, each linked to its page; a job's page (reloading
while the job runs, its output directory, a tuning job's trial chart); every page valid HTML."""

from __future__ import annotations

import html
import json
import re
import urllib.request
from collections.abc import Sequence
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import CustomJob
from strict_html import StrictPage, check_page

from vertex_emulator import pages
from vertex_emulator.app import Emulator
from vertex_emulator.pages import job_kind
from vertex_emulator.rest import web as rest_web
from vertex_emulator.testing import PARENT, container_job, wait_for_state


def _page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/html")
        return str(response.read().decode())


def _rows(page: str) -> list[str]:
    return re.findall(r"<tr><td>.*?</tr>", page)


def test_the_index_lists_every_job_newest_first(
    emulator: Emulator, grpc_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = []
    for display in ("first <b>bold</b>", "second & co"):
        body = container_job(display, "pass")
        job = grpc_client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body)))
        done = wait_for_state(grpc_client, job.name, ["JOB_STATE_SUCCEEDED"], timeout=120)
        names.append((job.name, done))
    for path in ("/ui/", "/ui", "/"):
        page = _page(emulator.rest_endpoint + path)
        assert not _refreshes(check_page(page))  # every job ended
        rows = _rows(page)
        assert len(rows) == 2
        for row, (name, done) in zip(rows, reversed(names), strict=True):  # newest first
            assert f"href='/ui/{name}'" in row
            assert "JOB_STATE_SUCCEEDED" in row and "<td>CustomJob</td>" in row
            assert done.create_time.rfc3339()[:19] in row and done.end_time.rfc3339()[:19] in row
        assert "first &lt;b&gt;bold&lt;/b&gt;" in rows[1] and "<b>" not in page
        assert "second &amp; co" in rows[0]
    # each link opens the job's page
    assert "JOB_STATE_SUCCEEDED" in _page(f"{emulator.rest_endpoint}/ui/{names[0][0]}")

    monkeypatch.setattr(rest_web, "INDEX_LIMIT", 1)
    page = _page(emulator.rest_endpoint + "/ui/")
    assert len(_rows(page)) == 1 and names[1][0] in page and names[0][0] not in page
    assert "Only the 1 newest jobs are listed." in page


def test_an_empty_index_and_the_kinds() -> None:
    from vertex_emulator.pages import index_page

    assert b"No job yet." in index_page([], limit=10)
    assert job_kind(f"{PARENT}/customJobs/1") == "CustomJob"
    assert job_kind(f"{PARENT}/hyperparameterTuningJobs/2") == "HyperparameterTuningJob"


def _refreshes(parser: StrictPage) -> bool:
    return any(tag == "meta" and attrs.get("http-equiv") == "refresh" for tag, attrs in parser.tags)


def test_the_strict_check_fails_on_a_broken_page() -> None:
    for bad in (
        "<html lang='en'><head><title>t</title></head><body></body></html>",  # no doctype
        "<!doctype html><html><head><title>t</title></head><body></body></html>",  # no lang
        "<!doctype html><html lang='en'><head><title>t</title></head><body><p><b></p></body></html>",
    ):
        with pytest.raises(AssertionError):
            check_page(bad)


def test_a_running_job_page_reloads_itself_and_stops_once_it_ended(emulator: Emulator) -> None:
    """A job that has not ended: its page, its replicas' pages and the index reload every REFRESH_S
    seconds; once it ended none does. Every page passes the strict check, hostile names escaped."""
    body = container_job("<script>alert(1)</script> & co", workers=1)
    body["jobSpec"]["baseOutputDirectory"] = {"outputUriPrefix": "gs://bkt/runs/<1>"}
    stored = emulator.store.insert("customJobs", PARENT, body)  # stored, never submitted: PENDING
    name = stored["name"]
    assert stored["state"] not in pages.ENDED_STATES
    base = emulator.rest_endpoint
    job_page = _page(f"{base}/ui/{name}")
    for url in (f"{base}/ui/{name}", f"{base}/ui/"):
        parser = check_page(_page(url))
        assert _refreshes(parser), url
    assert "<script>" not in job_page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in job_page
    assert f"reloads every {pages.REFRESH_S} s" in job_page
    # the output directory: its URI and the local directory under the gcs root
    local = emulator.config.gcs_root / "bkt" / "runs" / "<1>"
    assert "gs://bkt/runs/&lt;1&gt;" in job_page and html.escape(str(local)) in job_page

    emulator.store.update(name, lambda job: job.update(state="JOB_STATE_CANCELLED"))
    for url in (f"{base}/ui/{name}", f"{base}/ui/"):
        parser = check_page(_page(url))
        assert not _refreshes(parser), url
    assert "reloads every" not in _page(f"{base}/ui/{name}")


def _study(values: Sequence[float | None], goal: str = "MAXIMIZE") -> dict[str, Any]:
    trials = []
    for index, value in enumerate(values, start=1):
        trial: dict[str, Any] = {
            "id": str(index),
            "state": "SUCCEEDED",
            "parameters": [{"parameterId": "x", "value": index}],
        }
        if value is not None:
            trial["finalMeasurement"] = {"stepCount": "3", "metrics": [{"metricId": "score", "value": value}]}
        trials.append(trial)
    return {
        "name": f"{PARENT}/hyperparameterTuningJobs/7",
        "displayName": "study <x>",
        "state": "JOB_STATE_SUCCEEDED",
        "studySpec": {"metrics": [{"metricId": "score", "goal": goal}]},
        "trialJobSpec": container_job("t")["jobSpec"],
        "trials": trials,
    }


def _points(page: str) -> list[tuple[str, float, float]]:
    found = re.findall(r"<circle class='(trial(?: best)?)' cx='([\d.]+)' cy='([\d.]+)'", page)
    return [(cls, float(cx), float(cy)) for cls, cx, cy in found]


@pytest.mark.parametrize(("goal", "best"), [("MAXIMIZE", 3), ("MINIMIZE", 2)])
def test_a_study_page_draws_one_point_per_trial_and_marks_the_best(goal: str, best: int) -> None:
    values = [0.2, 0.5, 0.1, 0.9, 0.4, 0.7]
    page = pages.job_page(_study(values, goal)["name"], _study(values, goal), lambda n, k: None).decode()
    check_page(page)
    points = _points(page)
    assert len(points) == 6
    assert [cls for cls, _, _ in points].count("trial best") == 1
    assert points[best][0] == "trial best"  # 0.9 is the highest, 0.1 the lowest
    xs = [cx for _, cx, _ in points]
    assert xs == sorted(xs) and len(set(xs)) == 6  # trial order
    ys = [cy for _, _, cy in points]
    order = sorted(range(6), key=lambda i: values[i])  # a higher value is drawn higher (smaller y)
    assert sorted(range(6), key=lambda i: -ys[i]) == order
    # the best-so-far line: a polyline with one vertex per trial, never getting worse
    line = re.search(r"class='best-so-far'[^>]*points='([^']*)'", page)
    assert line is not None
    heights = [float(p.split(",")[1]) for p in line.group(1).split()]
    assert len(heights) == 6
    pairs = list(zip(heights, heights[1:], strict=False))
    assert all(b <= a for a, b in pairs) if goal == "MAXIMIZE" else all(b >= a for a, b in pairs)


def test_trials_without_a_value_draw_no_point_and_no_chart_without_any() -> None:
    page = pages.job_page("j", _study([None, 0.3, None]), lambda n, k: None).decode()
    check_page(page)
    assert len(_points(page)) == 1
    assert pages.trial_chart(_study([None, None])) == ""
    assert "trial chart" not in pages.job_page("j", _study([None]), lambda n, k: None).decode()
