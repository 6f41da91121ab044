"""Secrets stay out of replicas, replica logs and the emulator's web pages (JSON and HTML)."""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from vertex_emulator import testing

pytestmark = pytest.mark.slow

EMULATOR_SECRET = "emulator-env-canary-5b1f"
SPEC_SECRET = "spec-env-canary-93ad"
CODE = """
import json, os, time
print(json.dumps(sorted(os.environ)), flush=True)  # the names only
time.sleep(600)
"""


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return str(resp.read().decode())


def test_no_page_and_no_log_shows_an_env_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SECRET_DB", EMULATOR_SECRET)
    with testing.running_emulator(tmp_path) as em:
        body = testing.container_job("secrets", CODE, enableWebAccess=True)
        pool = body["jobSpec"]["workerPoolSpecs"][0]
        pool["containerSpec"]["command"] = [sys.executable, "-c", CODE]
        pool["containerSpec"]["env"] = [{"name": "TRAINING_API_TOKEN", "value": SPEC_SECRET}]
        job = em.store.insert("customJobs", "projects/p/locations/l", body)
        em.runner.submit(job["name"])
        testing.wait_for_state(em, job["name"], {"JOB_STATE_RUNNING"}, timeout=60)
        web = f"{em.rest_endpoint}/web/{quote(job['name'])}/workerpool0-0"
        deadline = time.monotonic() + 60
        while not (view := json.loads(fetch(web + "?format=json")))["logTail"]:
            assert time.monotonic() < deadline, "no log line from the replica"
            time.sleep(0.05)
        names = json.loads(view["logTail"][-1])
        assert "TRAINING_API_TOKEN" in names  # the spec's env reaches the replica
        assert "AIRFLOW_CONN_SECRET_DB" not in names  # the emulator's own does not
        pages = [
            json.dumps(view),
            fetch(web),
            fetch(f"{em.rest_endpoint}/ui/{quote(job['name'])}"),
            fetch(f"{em.rest_endpoint}/"),
        ]
        log = (em.config.state_dir / "logs" / job["name"].rsplit("/", 1)[1] / "workerpool0-0.log").read_text()
        for text in [*pages, log]:
            assert SPEC_SECRET not in text and EMULATOR_SECRET not in text
        em.runner.cancel(job["name"])
        testing.wait_for_state(em, job["name"], {"JOB_STATE_CANCELLED"}, timeout=60)
