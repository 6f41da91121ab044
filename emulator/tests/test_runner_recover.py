"""An emulator that dies (SIGKILL) leaves no replica behind, and the next one settles its jobs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from runner_support import TRAINERS, alive, finished, pool, wait_for

from vertex_emulator.core.config import EmulatorConfig
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.runtime.runner import Runner

#: starting two jobs' replicas (an interpreter each, plus a child and a daemon) took over 20 s on a
#: machine with a load average of 20 on 2 cores; the replicas sleep far longer than this bound
STARTUP_S = 120.0

pytestmark = pytest.mark.slow


def test_recover_after_the_emulator_was_killed(tmp_path: Path) -> None:
    state, gcs = tmp_path / "state", tmp_path / "gcs"
    pids = tmp_path / "pids"
    marker = tmp_path / "slept"
    plain = {
        "displayName": "plain",
        "jobSpec": {
            "workerPoolSpecs": [
                pool("behave.py", 1, "--sleep", "600", "--child", "--daemon", "--pidfile", str(pids))
            ]
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
            lambda: pids.exists() and len(lines := pids.read_text().splitlines()) == 3 and lines,
            timeout=STARTUP_S,
            what="the replica, its child and its daemon",
        )
        wait_for(marker.exists, timeout=STARTUP_S, what="the restartable job's replica")
        leader, child, daemon = (int(line.split()[0]) for line in recorded)
        store = JobStore(state / "jobs.sqlite3")
        wait_for(
            lambda: store.get(plain_name)["state"] == "JOB_STATE_RUNNING", timeout=STARTUP_S, what="RUNNING"
        )
        emulator.send_signal(signal.SIGKILL)
        emulator.wait(timeout=10)
    finally:
        if emulator.poll() is None:
            emulator.kill()
    # the parent-death signal told each replica's supervisor to stop its whole tree, the daemon too
    wait_for(lambda: not alive([leader, child, daemon]), what="the replica's tree to die with the emulator")
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
        # restartJobOnWorkerRestart: the job runs again (the second run ends at once) and succeeds
        again = finished(store, restart_name)
        assert again["state"] == "JOB_STATE_SUCCEEDED", again.get("error")
        view = runner.replica_view(restart_name, "workerpool0-0")
        assert view is not None and view["logTail"] == ["run again: done at once"]
        # replica views of the dead emulator's jobs come from the state dir
        old = runner.replica_view(plain_name, "workerpool0-0")
        assert old is not None and old["pid"] != leader  # the supervisor's pid
    finally:
        runner.close()
        store.close()


def test_recover_kills_what_the_supervisors_left(tmp_path: Path) -> None:
    """The backstop: a process of a RUNNING job's replica (found by its CLOUD_ML_HP_METRIC_FILE) that
    outlived its supervisor -- here started without one -- is killed when the next emulator recovers."""
    state, gcs = tmp_path / "state", tmp_path / "gcs"
    store = JobStore(state / "jobs.sqlite3")
    job = store.insert("customJobs", "projects/p/locations/l", {"displayName": "j", "jobSpec": {}})
    store.update(job["name"], lambda j: j.update(state="JOB_STATE_RUNNING"))
    job_id = job["name"].rsplit("/", 1)[1]
    metric = state / "logs" / job_id / "hypertune" / "workerpool0-0.metrics"
    other = state / "logs" / f"{job_id}9" / "hypertune" / "workerpool0-0.metrics"  # another job's
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    left = subprocess.Popen(sleep, env={"CLOUD_ML_HP_METRIC_FILE": str(metric)}, start_new_session=True)
    bystander = subprocess.Popen(sleep, env={"CLOUD_ML_HP_METRIC_FILE": str(other)}, start_new_session=True)
    runner = Runner(store, EmulatorConfig(state_dir=state, gcs_root=gcs, stop_grace_s=1.0))
    try:
        runner.recover()
        assert left.wait(timeout=10) == -signal.SIGKILL
        recovered = store.get(job["name"])
        assert recovered["state"] == "JOB_STATE_FAILED"
        assert recovered["error"]["message"].endswith("; its replicas were stopped.")
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
        left.kill()
        left.wait()
        runner.close()
        store.close()
