"""The edges of keeping the emulator's state (app/state.py, core/snapshots.py): what a reset sets back
beside jobs, logs and objects (the scenario and its job outcome rules, the fault draws), what a snapshot
leaves out under ``--gcs-root`` (symlinks, uploads in flight, a state directory inside it) and how many
snapshots are kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions
from logging_support import custom
from polling import poll_until
from test_state import admin

from vertex_emulator import testing
from vertex_emulator.core import snapshots
from vertex_emulator.core.config import Faults
from vertex_emulator.scenario.loader import parse_scenario
from vertex_emulator.testing import PARENT, container_job, wait_for_state

SCENARIO = """version: 1
timeline:
  - at: 0
    job_outcome: {display_name: "played-*", state: SUCCEEDED, after: 1}
  - at: 0
    stockout_after_s: 0.5
"""


def test_a_reset_forgets_the_scenario_and_its_job_outcomes(tmp_path: Path) -> None:
    with testing.running_emulator(tmp_path, scenario=parse_scenario(SCENARIO, "night.yaml")) as em:
        client = testing.grpc_client(em)
        assert admin(em, "GET", "/emulator/scenario")[1]["playing"] is True
        assert admin(em, "GET", "/emulator/capacity")[1]["stockout_after_s"] == 0.5
        played = client.create_custom_job(
            parent=PARENT, custom_job=custom(container_job("played-1", "exit(3)"))
        )
        assert wait_for_state(client, played.name, ["JOB_STATE_SUCCEEDED"], timeout=60)  # played, not run

        assert admin(em, "POST", "/emulator/state:reset", {})[0] == 200
        assert admin(em, "GET", "/emulator/scenario")[1] == {"playing": False}
        assert admin(em, "GET", "/emulator/capacity")[1]["stockout_after_s"] == 60.0  # the start setting
        ran = client.create_custom_job(parent=PARENT, custom_job=custom(container_job("played-2", "exit(3)")))
        failed = wait_for_state(client, ran.name, ["JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"], timeout=60)
        assert failed.state.name == "JOB_STATE_FAILED"  # its code ran: the rule went with the scenario
        assert "non-zero status of 3" in failed.error.message


def _draws(client: Any) -> list[str]:
    outcomes = []
    for _ in range(12):
        try:
            client.get_custom_job(name=f"{PARENT}/customJobs/1", retry=None)
        except exceptions.GoogleAPICallError as exc:
            outcomes.append(type(exc).__name__)
    return outcomes


def test_the_fault_draws_start_again_from_the_seed(tmp_path: Path) -> None:
    faults = Faults(error_rate={"GetCustomJob": 0.5}, seed=7)
    with testing.running_emulator(tmp_path, faults=faults) as em:
        client = testing.grpc_client(em)
        first = _draws(client)
        assert {"ServiceUnavailable", "NotFound"} == set(first)
        assert admin(em, "POST", "/emulator/state:reset", {})[0] == 200
        assert _draws(client) == first


def test_symlinks_uploads_in_flight_and_the_state_directory_are_no_objects(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not an object")
    root = tmp_path / "gcs"
    with testing.running_emulator(tmp_path, gcs_root=root, state_dir=root / "emulator-state") as em:
        bucket = root / "models"
        bucket.mkdir()
        (bucket / "model.txt").write_text("weights")
        (bucket / "link.txt").symlink_to(outside)
        (bucket / ".avd-upload-0123456789abcdef").write_text("half an upload")
        status, kept = admin(em, "POST", "/emulator/state:snapshot", {"name": "n"})
        assert status == 200 and kept["objects"] == 1, kept
        gcs = em.config.state_dir / "snapshots" / "n" / "gcs"
        assert sorted(str(p.relative_to(gcs)) for p in gcs.rglob("*")) == ["models", "models/model.txt"]

        assert admin(em, "POST", "/emulator/state:reset", {})[0] == 200
        assert sorted(p.name for p in root.iterdir()) == ["emulator-state"]
        assert outside.read_text() == "not an object"  # the link was removed, not followed
        assert admin(em, "POST", "/emulator/state:restore", {"name": "n"})[0] == 200
        assert (bucket / "model.txt").read_text() == "weights" and not (bucket / "link.txt").exists()
        assert json.loads((gcs.parent / "snapshot.json").read_text())["objects"] == 1


def test_the_number_of_snapshots_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshots, "MAX_SNAPSHOTS", 2)
    with testing.running_emulator(tmp_path) as em:
        for name in ("a", "b"):
            assert admin(em, "POST", "/emulator/state:snapshot", {"name": name})[0] == 200
        status, answer = admin(em, "POST", "/emulator/state:snapshot", {"name": "c"})
        assert (status, answer["error"]["status"]) == (400, "FAILED_PRECONDITION")
        assert (
            answer["error"]["message"]
            == "snapshots: 2 are kept already, the most there may be; delete one first"
        )
        assert admin(em, "POST", "/emulator/state:snapshot", {"name": "a", "replace": True})[0] == 200


def test_a_restored_job_with_restart_on_worker_restart_runs_again(tmp_path: Path) -> None:
    marks = tmp_path / "runs"
    marks.mkdir()
    code = (
        f"import os, time; open(os.path.join({str(marks)!r}, str(os.getpid())), 'w').close(); time.sleep(600)"
    )
    body = container_job("restartable", code, scheduling={"restartJobOnWorkerRestart": True})
    with testing.running_emulator(tmp_path / "em") as em:
        client = testing.grpc_client(em)
        job = client.create_custom_job(parent=PARENT, custom_job=custom(body))
        wait_for_state(client, job.name, ["JOB_STATE_RUNNING"], timeout=120)
        poll_until(lambda: len(list(marks.iterdir())) == 1, timeout=60, interval=0.05, what="the first run")
        assert admin(em, "POST", "/emulator/state:snapshot", {"name": "running"})[0] == 200
        status, restored = admin(em, "POST", "/emulator/state:restore", {"name": "running"})
        assert status == 200 and restored["stoppedJobs"] == [job.name], restored
        # its driver held back during the restore, started after it: the replica runs a second time
        poll_until(lambda: len(list(marks.iterdir())) == 2, timeout=60, interval=0.05, what="the second run")
        assert client.get_custom_job(name=job.name).state.name == "JOB_STATE_RUNNING"
        client.cancel_custom_job(name=job.name)
        wait_for_state(client, job.name, ["JOB_STATE_CANCELLED"], timeout=60)


def test_what_a_stopped_emulator_left_of_a_snapshot_is_removed_at_start(tmp_path: Path) -> None:
    left = tmp_path / "emulator-state" / "snapshots" / ".tmp-0123456789ab"
    (left / "logs").mkdir(parents=True)
    with testing.running_emulator(tmp_path) as em:
        assert not left.exists()
        assert em.state.list() == []
