"""The emulator's index page, ``/ui/`` (the address the banner prints; it answered 404) and ``/``:
every job, finished ones too, newest first, escaped, each linked to its page."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import CustomJob

from vertex_emulator import rest
from vertex_emulator.app import Emulator
from vertex_emulator.pages import job_kind
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

    monkeypatch.setattr(rest, "INDEX_LIMIT", 1)
    page = _page(emulator.rest_endpoint + "/ui/")
    assert len(_rows(page)) == 1 and names[1][0] in page and names[0][0] not in page
    assert "Only the 1 newest jobs are listed." in page


def test_an_empty_index_and_the_kinds() -> None:
    from vertex_emulator.pages import index_page

    assert b"No job yet." in index_page([], limit=10)
    assert job_kind(f"{PARENT}/customJobs/1") == "CustomJob"
    assert job_kind(f"{PARENT}/hyperparameterTuningJobs/2") == "HyperparameterTuningJob"
