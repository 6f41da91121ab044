"""The runner's lifecycle with real replica processes: crashes, cancel and timeout of whole process
trees, restarts, injected faults, the Reduction Server's idle replicas, and exit statuses."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from runner_support import (
    alive,
    create,
    finished,
    in_groups,
    pool,
    script_pool,
    wait_for,
)

pytestmark = pytest.mark.slow


def test_crashed_replica_fails_the_job_with_its_log_tail(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    spec = {
        "workerPoolSpecs": [
            pool("behave.py", 1, "--sleep", "30"),
            pool("behave.py", 1, "--say", "step 1", "--say", "loss=nan", "--say", "boom", "--exit", "3"),
        ]
    }
    name = create(store, runner, spec)
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_FAILED"
    assert job["error"]["code"] == 3
    msg = job["error"]["message"]
    assert msg.startswith("The replica workerpool1-0 exited with a non-zero status of 3.")
    assert msg.endswith("step 1\nloss=nan\nboom")
    primary = runner.replica_view(name, "workerpool0-0")
    assert primary is not None and primary["state"] == "STOPPED" and not alive([primary["pid"]])


def test_cancel_stops_every_process_tree(env: Any, tmp_path: Path) -> None:
    """Each replica forks a child and a daemon (fork, setsid, fork): cancel leaves none of them."""
    store, config, runner = env
    pids = tmp_path / "pids"
    args = ("--sleep", "60", "--child", "--daemon", "--pidfile", str(pids))
    spec = {"workerPoolSpecs": [pool("behave.py", 1, *args), pool("behave.py", 2, *args)]}
    name = create(store, runner, spec)
    lines = wait_for(
        lambda: pids.exists() and len(pids.read_text().splitlines()) == 9 and pids.read_text().splitlines()
    )
    wait_for(lambda: store.get(name)["state"] == "JOB_STATE_RUNNING", what="RUNNING")
    recorded = [tuple(map(int, line.split())) for line in lines]
    groups = {pgid for _, pgid in recorded}
    assert len(groups) == 6  # each replica's group, and each daemon left it for a session of its own
    assert len(alive([pid for pid, _ in recorded])) == 9
    runner.cancel(name)
    assert store.get(name)["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_CANCELLED"
    assert job["error"]["code"] == 1 and "cancelled" in job["error"]["message"]
    assert in_groups(groups) == []
    assert alive([pid for pid, _ in recorded]) == []


DAEMON_THEN_EXIT = """\
import os, sys, time
if os.fork() == 0:  # a daemon: fork, setsid, fork again, the middle process exits
    os.setsid()
    if os.fork() == 0:
        open(sys.argv[1], "a").write(f"{os.getpid()}\\n")
        time.sleep(60)
    os._exit(0)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
"""


def test_a_daemon_does_not_outlive_its_replica(env: Any, tmp_path: Path) -> None:
    """The primary exits 0 while its daemon still runs: the job succeeds and the daemon is already gone."""
    store, config, runner = env
    pids = tmp_path / "pids"
    primary = pool("behave.py")
    primary["containerSpec"].update(command=[sys.executable, "-c", DAEMON_THEN_EXIT], args=[str(pids)])
    name = create(store, runner, {"workerPoolSpecs": [primary]})
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    daemon = int(pids.read_text().split()[0])
    assert alive([daemon]) == []  # stopped before the replica's exit was reported


def test_timeout_fails_the_job_and_leaves_no_process(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    pids = tmp_path / "pids"
    spec = {
        "workerPoolSpecs": [
            pool("behave.py", 1, "--sleep", "60", "--child", "--pidfile", str(pids)),
            pool("behave.py", 1, "--sleep", "60", "--child", "--pidfile", str(pids)),
        ],
        "scheduling": {"timeout": "1.5s"},
    }
    t0 = time.monotonic()
    name = create(store, runner, spec)
    job = finished(store, name)
    # the timeout ended it, not the replicas' 60 s sleep (a liveness bound, loose for a loaded host)
    assert 1.5 <= time.monotonic() - t0 < 45
    assert job["state"] == "JOB_STATE_FAILED" and job["error"]["code"] == 4
    assert "scheduling.timeout of 1.5s" in job["error"]["message"]
    recorded = [tuple(map(int, line.split())) for line in pids.read_text().splitlines()]
    assert len(recorded) == 4
    assert in_groups({pgid for _, pgid in recorded}) == []


def test_restart_job_on_worker_restart_restarts_on_platform_crash_only(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    # A worker killed by the platform (an injected crash) restarts the entire job, as the proto says.
    config.faults.crash_replicas = ["workerpool1-*"]
    config.faults.crash_after_s = 0.3
    spec = {
        "workerPoolSpecs": [
            pool("behave.py", 1, "--sleep", "1.5"),
            pool("behave.py", 1, "--sleep", "30"),
        ],
        "scheduling": {"restartJobOnWorkerRestart": True},
    }
    name = create(store, runner, spec)
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    worker = runner.replica_view(name, "workerpool1-0")
    primary = runner.replica_view(name, "workerpool0-0")
    assert worker is not None and primary is not None
    assert worker["restarts"] == 1 and primary["restarts"] == 1  # the entire job restarted once
    assert "---- emulator: restart 1 of workerpool1-0 ----" in worker["logTail"]
    # without the flag the same crash fails the job
    spec["scheduling"] = {}
    job = finished(store, create(store, runner, spec, name="no-flag"))
    assert job["state"] == "JOB_STATE_FAILED"
    assert "crashed (emulator fault injection)" in job["error"]["message"]
    # with no restart left, a crash fails the job and says so
    config.restart_limit = 0
    spec["scheduling"] = {"restartJobOnWorkerRestart": True}
    job = finished(store, create(store, runner, spec, name="no-restart-left"))
    assert job["state"] == "JOB_STATE_FAILED" and "already restarted 0 times" in job["error"]["message"]


def test_restart_job_on_worker_restart_does_not_restart_user_code_failures(env: Any) -> None:
    store, config, runner = env
    # Training code exiting non-zero is not a worker restart: the job fails at once, with no restart,
    # so a deterministic bug fails locally as it fails on Vertex AI.
    spec = {
        "workerPoolSpecs": [pool("behave.py", 1, "--exit", "5")],
        "scheduling": {"restartJobOnWorkerRestart": True},
    }
    name = create(store, runner, spec)
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_FAILED" and "status of 5" in job["error"]["message"]
    assert "not when training code exits with an error" in job["error"]["message"]
    view = runner.replica_view(name, "workerpool0-0")
    assert view is not None and view["restarts"] == 0


def test_faults_delay_scheduling_and_crash_replicas(env: Any) -> None:
    store, config, runner = env
    config.faults.queued_s = 0.3
    config.faults.pending_s = 0.3
    config.faults.crash_replicas = ["workerpool1-*"]
    config.faults.crash_after_s = 0.2
    spec = {"workerPoolSpecs": [pool("behave.py", 1, "--sleep", "30"), pool("behave.py", 2, "--sleep", "30")]}
    name = create(store, runner, spec)
    seen = {store.get(name)["state"]}
    seen.add(wait_for(lambda: (s := store.get(name)["state"]) != "JOB_STATE_QUEUED" and s))
    job = finished(store, name)
    assert seen == {"JOB_STATE_QUEUED", "JOB_STATE_PENDING"}
    assert job["state"] == "JOB_STATE_FAILED"
    assert "exited with a non-zero status of 137" in job["error"]["message"]
    assert "fault injection" in job["error"]["message"]


def test_reduction_server_replicas_run_idle(env: Any) -> None:
    store, config, runner = env
    rs = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    spec = {
        "workerPoolSpecs": [
            pool("behave.py", 1, "--sleep", "30"),
            pool("behave.py", 1, "--sleep", "30"),
            {
                "machineSpec": {"machineType": "n1-highcpu-16"},
                "replicaCount": "2",
                "containerSpec": {"imageUri": rs},
            },
        ],
        "enableWebAccess": True,
    }
    name = create(store, runner, spec)
    view = wait_for(
        lambda: (v := runner.replica_view(name, "workerpool2-1")) and v["logTail"] and v,
        what="reducer placeholder output",
    )
    assert view["state"] == "RUNNING" and alive([view["pid"]])
    assert "performs no reduction" in view["logTail"][0]
    assert sorted(store.get(name)["webAccessUris"]) == [
        "workerpool0-0",
        "workerpool1-0",
        "workerpool2-0",
        "workerpool2-1",
    ]
    runner.cancel(name)
    assert finished(store, name)["state"] == "JOB_STATE_CANCELLED"
    assert not alive([view["pid"]])


def test_the_service_variables_win_over_the_pools_env(env: Any, tmp_path: Path) -> None:
    """docs/concepts/replica-environment.md: a pool's own env is applied first and the service's
    variables win over it; AIP_TENSORBOARD_RESOURCE_NAME is set when the job names a Tensorboard."""
    store, _, runner = env
    out = tmp_path / "env.json"
    code = f"import json, os; open({str(out)!r}, 'w').write(json.dumps(dict(os.environ)))"
    spec = {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": "1",
                "containerSpec": {
                    "imageUri": "local/trainer:1",
                    "command": [sys.executable, "-c", code],
                    "env": [
                        {"name": "CLOUD_ML_JOB_ID", "value": "mine"},
                        {"name": "AIP_MODEL_DIR", "value": "/tmp/mine"},
                        {"name": "CLUSTER_SPEC", "value": "{}"},
                        {"name": "OWN", "value": "kept"},
                    ],
                },
            }
        ],
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/runs/b"},
        "tensorboard": "projects/p/locations/us-central1/tensorboards/7",
    }
    name = create(store, runner, spec)
    job = finished(store, name, timeout=90)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    seen = json.loads(out.read_text())
    assert seen["CLOUD_ML_JOB_ID"] == name.split("/")[-1]
    assert seen["AIP_MODEL_DIR"] == "gs://bkt/runs/b/model/"
    assert json.loads(seen["CLUSTER_SPEC"])["task"] == {"type": "workerpool0", "index": 0}
    assert seen["OWN"] == "kept"
    assert seen["AIP_TENSORBOARD_RESOURCE_NAME"] == "projects/p/locations/us-central1/tensorboards/7"


def test_a_worker_exiting_0_ends_only_that_replica(env: Any, tmp_path: Path) -> None:
    """docs/emulator.md: success is the primary exiting 0; another replica exiting 0 just ends that
    replica (the job runs on until the primary ends)."""
    store, _, runner = env
    release = tmp_path / "release"
    primary = f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)"
    name = create(store, runner, {"workerPoolSpecs": [script_pool(primary), script_pool("pass")]})
    wait_for(
        lambda: (runner.replica_view(name, "workerpool1-0") or {}).get("exitCode") == 0,
        timeout=90,  # two interpreters to start: slow on a loaded machine
        what="the worker's exit 0",
    )
    assert store.get(name)["state"] == "JOB_STATE_RUNNING"
    assert (runner.replica_view(name, "workerpool0-0") or {}).get("exitCode") is None
    release.touch()
    assert finished(store, name, timeout=60)["state"] == "JOB_STATE_SUCCEEDED"


def test_a_replica_ended_by_a_signal_reports_128_plus_n(env: Any) -> None:
    """docs/emulator.md: a failed job's message gives the replica's exit status, 128 + n for signal n."""
    store, _, runner = env
    code = "import os, signal; os.kill(os.getpid(), signal.SIGUSR1)"
    name = create(store, runner, {"workerPoolSpecs": [script_pool(code)]})
    job = finished(store, name, timeout=90)
    assert job["state"] == "JOB_STATE_FAILED" and job["error"]["code"] == 3
    assert f"exited with a non-zero status of {128 + 10}" in job["error"]["message"]
    assert "workerpool0-0" in job["error"]["message"]
