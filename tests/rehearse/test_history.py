"""A recorded history through a rehearsal: the 23 ended CustomJobs of the emulator's history fixture
(emulator/tests/data/history, Vertex AI's List JSON) -> a scenario (``python -m vertex_emulator.scenario
from-history``; tests/rehearse/recorded-night.yaml is its output) -> a rehearsal of a DAG that makes
those jobs again (tests/rehearse/dags/history.py: their display names and labels, which the scenario's
rules match) -> the report, checked job by job against the history: the same end state, error, time
queued and time run.

The bound, as in the emulator's own round trip: a played job's waits are the service clock's, which
never ends a wait early, so each duration is at least the recorded one (less 2 ms: the scenario's times
are rounded to the millisecond, the report's too) and later only by the real time the emulator takes
around a wait, times the compression: one real second of it (600 s of the night at x600)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos
from airflow_vertex_dist.rehearse import Rehearsal

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
HISTORY = HERE.parents[1] / "emulator" / "tests" / "data" / "history"
PAGES = sorted(HISTORY.glob("custom-jobs-page*.json"))
COMPRESSION = 600
BOUND_S = COMPRESSION * 1.0
ENDED = ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED")


def _recorded() -> list[dict[str, Any]]:
    jobs = [job for page in PAGES for job in json.loads(page.read_text())["customJobs"]]
    ended = [job for job in jobs if job["state"] in ENDED]
    return sorted(ended, key=lambda job: (rfc3339_nanos(job["createTime"]), job["name"]))


def _seconds(job: dict[str, Any], start: str, end: str) -> float:
    return (rfc3339_nanos(job[end]) - rfc3339_nanos(job[start])) / 1e9


@pytest.mark.timeout(900)
def test_a_recorded_night_of_23_jobs_round_trips_through_a_rehearsal(
    tmp_path: Path, vertex_rehearsal: Callable[..., Rehearsal]
) -> None:
    scenario = tmp_path / "last-night.yaml"
    command = [sys.executable, "-m", "vertex_emulator.scenario", "from-history", *map(str, PAGES)]
    subprocess.run([*command, "--compression", str(COMPRESSION), "-o", str(scenario)], check=True)
    # the example the how-to rehearses is the converter's output
    assert (HERE / "recorded-night.yaml").read_text() == scenario.read_text()
    done = vertex_rehearsal(
        HERE / "dags" / "history.py",
        scenario,
        dates=[datetime(2026, 11, 24, tzinfo=timezone.utc)],
        # the played jobs write no replica lines (the history holds no log entries): no settle window
        # for late lines after each job's end (2 real seconds by default, 23 times)
        env={
            "VERTEX_DIST_HISTORY": os.pathsep.join(map(str, PAGES)),
            "AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS": "0",
        },
    )
    recorded = _recorded()
    assert len(recorded) == 23
    [run] = done.report["runs"]
    assert len(run["jobs"]) == 23 and done.report["jobs_outside_runs"] == 0  # one job per task
    by_task = {job["task"]: job for job in run["jobs"]}
    for number, job in enumerate(recorded):
        task = f"job_{number:02d}"
        got, where = by_task[task], f"{task} ({job['displayName']}, {job['name']})"
        assert got["state"] == job["state"], where
        assert got["error"] == (job.get("error") or {}).get("message"), where
        assert run["tasks"][task] == ("success" if job["state"] == "JOB_STATE_SUCCEEDED" else "failed"), where
        for what, replayed, wanted in (
            ("queued", got["started_s"] - got["created_s"], _seconds(job, "createTime", "startTime")),
            ("ran", got["ended_s"] - got["started_s"], _seconds(job, "startTime", "endTime")),
        ):
            assert wanted - 0.002 <= replayed <= wanted + BOUND_S, (where, what, replayed, wanted)
    # the history held failures: so does the rehearsal, and it says so
    assert run["state"] == "failed" and not done.ok
    assert done.failures[0].startswith("2026-11-24T00:00:00+00:00: failed (job_02 failed, ")
