"""An emulator that dies (SIGKILL) leaves no replica behind, and the next one settles its jobs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_vertex_dist.emulator.config import EmulatorConfig
from airflow_vertex_dist.emulator.runner import Runner
from airflow_vertex_dist.emulator.store import JobStore

from .test_runner import TRAINERS, alive, finished, in_groups, pool, wait_for

pytestmark = pytest.mark.slow


def test_recover_after_the_emulator_was_killed(tmp_path: Path) -> None:
    state, gcs = tmp_path / "state", tmp_path / "gcs"
    pids = tmp_path / "pids"
    marker = tmp_path / "slept"
    plain = {
        "displayName": "plain",
        "jobSpec": {
            "workerPoolSpecs": [pool("behave.py", 1, "--sleep", "60", "--child", "--pidfile", str(pids))]
        },
    }
    restartable = {
        "displayName": "restartable",
        "jobSpec": {
            "workerPoolSpecs": [pool("behave.py", 1, "--sleep", "60", "--sleep-once", str(marker))],
            "scheduling": {"restartJobOnWorkerRestart": True},
        },
    }
    jobs_file = tmp_path / "jobs.json"
    jobs_file.write_text(json.dumps([plain, restartable]))
    emulator = subprocess.Popen(
        [sys.executable, str(TRAINERS / "run_runner.py"), str(state), str(gcs), str(jobs_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert emulator.stdout is not None
        plain_name, restart_name = json.loads(emulator.stdout.readline())
        recorded = wait_for(
            lambda: pids.exists() and len(lines := pids.read_text().splitlines()) == 2 and lines,
            what="the replica and its child",
        )
        wait_for(marker.exists, what="the restartable job's replica")
        leader, child = (int(line.split()[0]) for line in recorded)
        group = int(recorded[0].split()[1])
        store = JobStore(state / "jobs.sqlite3")
        wait_for(lambda: store.get(plain_name)["state"] == "JOB_STATE_RUNNING", what="RUNNING")
        emulator.send_signal(signal.SIGKILL)
        emulator.wait(timeout=10)
    finally:
        if emulator.poll() is None:
            emulator.kill()
    # the parent-death signal took the replica down with the emulator; its own child is orphaned
    wait_for(lambda: not alive([leader]), what="the replica to die with the emulator")
    assert alive([child]) == [child]
    assert store.get(plain_name)["state"] == "JOB_STATE_RUNNING"  # nobody settled it yet

    runner = Runner(store, EmulatorConfig(state_dir=state, gcs_root=gcs, stop_grace_s=1.0))
    try:
        runner.recover()
        job = store.get(plain_name)
        assert job["state"] == "JOB_STATE_FAILED" and job["error"]["code"] == 13
        assert job["error"]["message"] == (
            "The emulator restarted while the job was RUNNING; its replicas were stopped."
        )
        assert "endTime" in job
        wait_for(lambda: in_groups({group}) == [], what="the orphaned child to be stopped")
        # restartJobOnWorkerRestart: the job runs again (the second run ends at once) and succeeds
        again = finished(store, restart_name)
        assert again["state"] == "JOB_STATE_SUCCEEDED", again.get("error")
        view = runner.replica_view(restart_name, "workerpool0-0")
        assert view is not None and view["logTail"] == ["run again: done at once"]
        # replica views of the dead emulator's jobs come from the state dir
        old = runner.replica_view(plain_name, "workerpool0-0")
        assert old is not None and old["pid"] == leader
    finally:
        runner.close()
        store.close()
