"""A real job history as a scenario (scenario/history.py, ``python -m vertex_emulator.scenario
from-history``): the recorded night in tests/data/history (written by tests/history_fixture.py from
Vertex AI's documented JSON shapes) round-trips: history -> scenario -> rehearsal through the real gRPC
JobService -> the same states, errors and durations.

The bound: a played job's waits are the service clock's (core/clock.py), which never ends a wait early,
so each replayed duration is at least the history's (less 1 ms: the scenario's times are rounded to
the millisecond) and later only by the real time the emulator takes around a wait (threads, the store's
writes, the test's own submission) times the compression. We allow one real second of that per
duration: ``compression x 1 s`` scenario seconds (300 s at x300, a two-hour night played in 26 s)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from capacity_support import client_for
from google.cloud.aiplatform_v1 import CustomJob
from history_fixture import DIR, files

from vertex_emulator import testing
from vertex_emulator.core.timefmt import parse_rfc3339
from vertex_emulator.scenario.__main__ import main
from vertex_emulator.scenario.history import HistoryJob, history_scenario, read_history, read_logs
from vertex_emulator.scenario.loader import ScenarioError, parse_scenario
from vertex_emulator.testing import PARENT, running_emulator, wait_for_state

COMPRESSION = 300.0
BOUND_S = COMPRESSION * 1.0  # one real second of the emulator's own time, in scenario seconds
PAGES = sorted(DIR.glob("*-jobs*.json"))
ENDED = ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED")


def _history() -> list[HistoryJob]:
    jobs = read_history(PAGES)
    read_logs([DIR / "entries.json"], jobs)
    return jobs


def _t(job: dict[str, Any], key: str) -> float:
    return parse_rfc3339(job[key]).timestamp()


def test_the_fixture_is_what_its_script_writes() -> None:
    for name, text in files().items():
        assert (DIR / name).read_text(encoding="utf-8") == text, (
            f"stale: python {DIR.parent.parent}/history_fixture.py"
        )


def test_the_history_becomes_one_outcome_per_ended_custom_job_in_order() -> None:
    jobs = _history()
    custom = [job for job in jobs if job.kind == "customJobs"]
    assert len(custom) == 23 and [job.kind for job in jobs].count("hyperparameterTuningJobs") == 1
    assert "still-running" not in {job.display_name for job in jobs}  # not ended: not reproduced
    assert [job.created for job in jobs] == sorted(job.created for job in jobs)
    text = history_scenario(jobs, COMPRESSION)
    scenario = parse_scenario(text)
    outcomes = [event.job_outcome for event in scenario.timeline]
    assert scenario.compression == COMPRESSION and len(outcomes) == 23
    assert all(
        o is not None and o.first == 1 and e.at == 0 for o, e in zip(outcomes, scenario.timeline, strict=True)
    )
    assert (
        "# not played (a scenario plays CustomJobs only)" in text
        and "hyperparameterTuningJobs/4400000000000000001" in text
    )
    first = outcomes[0]
    assert first is not None and (first.display_name, first.labels) == (
        "nightly-train",
        {"team": "nlp", "run": "nightly"},
    )
    assert (first.state, first.queued, first.after) == ("SUCCEEDED", 12.5, 5400.0)
    assert first.log_lines == ["loading data", "nightly-train: step 100", "done"]
    eval_lines = outcomes[1].log_lines if outcomes[1] is not None else []
    assert eval_lines[-1] == "eval accuracy 0.91"  # a jsonPayload's message, after the text entries
    failed = [o for o in outcomes if o is not None and o.state == "FAILED"]
    assert sorted({o.error_code for o in failed} - {None}) == [3, 8, 9, 13]
    assert (
        len(
            parse_scenario(history_scenario(jobs, COMPRESSION, max_log_lines=1))
            .timeline[0]
            .job_outcome.log_lines
        )
        == 1
    )  # type: ignore[union-attr]


def test_bad_input_names_the_file_the_line_and_the_json_path(tmp_path: Path) -> None:
    page = tmp_path / "page.json"
    page.write_text(
        '{"customJobs": [\n  {"name": "a", "state": "JOB_STATE_SUCCEEDED",\n'
        '   "createTime": "yesterday"}\n]}\n'
    )
    with pytest.raises(
        ScenarioError, match=r"^page\.json:3: customJobs\[0\]\.createTime: must be an RFC 3339 time"
    ):
        read_history([page])
    page.write_text('{"models": []}')
    with pytest.raises(
        ScenarioError, match=r"^page\.json:1: \(the file\): must be a List answer with customJobs"
    ):
        read_history([page])
    page.write_text('{"customJobs": [{"state": "JOB_STATE_FAILED"}]}')
    with pytest.raises(ScenarioError, match=r"^page\.json:1: customJobs\[0\]\.name: is missing"):
        read_history([page])
    assert main(["from-history", str(page), "--compression", "60"]) == 2
    assert main(["from-history", str(PAGES[0]), "--compression", "0"]) == 2  # the model's rule: 1 to 10000


def test_the_command_writes_the_scenario_and_explains_itself(tmp_path: Path) -> None:
    out = tmp_path / "night.yaml"
    args = ["from-history", *map(str, PAGES), "--logs", str(DIR / "entries.json"), "--compression", "300"]
    assert main([*args, "-o", str(out)]) == 0
    assert out.read_text() == history_scenario(_history(), COMPRESSION)
    help_text = subprocess.run(
        [sys.executable, "-m", "vertex_emulator.scenario", "from-history", "--help"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert (
        "--compression" in help_text
        and "entries.list" in help_text
        and "createTime -> startTime" in help_text
    )


def test_a_recorded_night_of_23_jobs_round_trips_through_the_job_service(tmp_path: Path) -> None:
    history = [job for job in _history() if job.kind == "customJobs"]
    scenario = parse_scenario(history_scenario(history, COMPRESSION))
    first = history[0].created
    names: list[str] = []
    with running_emulator(tmp_path / "em", scenario=scenario) as em, client_for(em, "grpc") as client:
        began = time.monotonic()
        for job in history:  # created as the history's order and offsets say
            threading.Event().wait(max(0.0, began + (job.created - first) / COMPRESSION - time.monotonic()))
            body = testing.container_job(job.display_name, "raise SystemExit(99)", labels=job.labels or None)
            names.append(
                client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body))).name
            )
        deadline = began + (max(j.end for j in history) - first) / COMPRESSION + 30
        played = [
            wait_for_state(em, name, ENDED, timeout=max(1.0, deadline - time.monotonic())) for name in names
        ]
        assert time.monotonic() - began < 60
    created0 = _t(played[0], "createTime")
    for job, got in zip(history, played, strict=True):
        where = f"{job.source} ({job.display_name})"
        assert got["state"] == job.state, where
        if job.state == "JOB_STATE_SUCCEEDED":
            assert "error" not in got, where
        else:
            assert (got["error"]["code"], got["error"]["message"]) == (job.error_code, job.error_message), (
                where
            )
        for what, replayed, recorded in (
            ("created", _t(got, "createTime") - created0, job.created - first),
            ("queued", _t(got, "startTime") - _t(got, "createTime"), job.queued_s),
            ("ran", _t(got, "endTime") - _t(got, "startTime"), job.ran_s),
        ):
            if what == "created":  # the test's submissions, real time: either way, by a bound each
                assert abs(replayed - recorded) <= 2 * BOUND_S, (where, what, replayed, recorded)
            else:
                assert recorded - 0.002 <= replayed <= recorded + BOUND_S, (where, what, replayed, recorded)


def test_the_new_job_outcome_fields_keep_their_rules() -> None:
    def outcome(body: str) -> Any:
        return (
            parse_scenario(f"version: 1\ntimeline:\n  - at: 0\n    job_outcome: {body}\n")
            .timeline[0]
            .job_outcome
        )

    assert outcome("{state: CANCELLED, queued: '+40m', message: CANCELED}").queued == 2400
    assert outcome("{error_code: 8}").error_code == 8
    for body, rule in (
        ("{state: SUCCEEDED, error_code: 8}", "only a FAILED outcome takes an error_code"),
        ("{state: CANCELLED, exit_status: 1}", "a CANCELLED outcome takes no exit_status"),
        ("{error_code: 17}", "less than or equal to 16"),
    ):
        with pytest.raises(ScenarioError, match=rule):
            outcome(body)


def test_the_example_history_is_the_example_scenario() -> None:
    root = Path(__file__).resolve().parents[1] / "scenarios"
    jobs = read_history([root / "history" / "custom-jobs.json"])
    assert (root / "replayed-history.yaml").read_text() == history_scenario(jobs, 600)


def test_drop_label_leaves_the_labels_that_name_a_run_out_of_the_rules(tmp_path: Path) -> None:
    page = tmp_path / "page.json"
    job = {
        "name": "projects/1/locations/us-central1/customJobs/7",
        "displayName": "ladder-20260111",
        "state": "JOB_STATE_SUCCEEDED",
        "createTime": "2026-01-11T00:00:00Z",
        "startTime": "2026-01-11T00:01:00Z",
        "endTime": "2026-01-11T01:01:00Z",
        "labels": {"example": "capacity-ladder", "airflow-run": "r9f2", "create-token": "t1"},
    }
    page.write_text(json.dumps({"customJobs": [job]}))
    out = tmp_path / "night.yaml"
    args = ["from-history", str(page), "--compression", "60", "-o", str(out)]
    assert main([*args, "--drop-label", "airflow-*", "--drop-label", "create-token"]) == 0
    [event] = parse_scenario(out.read_text()).timeline
    assert event.job_outcome is not None and event.job_outcome.labels == {"example": "capacity-ladder"}
    assert main(args) == 0  # without: every label
    [event] = parse_scenario(out.read_text()).timeline
    assert event.job_outcome is not None and len(event.job_outcome.labels) == 3
