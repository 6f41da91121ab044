"""The thread rule: a job's replicas are started, and restarted, from that job's own driver thread.

The parent-death signal a replica's supervisor asks for fires when the *thread* that started it exits
(emulator/driver.py). A replica started from a short-lived thread -- the request thread that submitted
the job, say -- would be stopped when that thread ends.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from runner_support import PARENT, finished, pool

from vertex_emulator.runtime import custom_job
from vertex_emulator.runtime.custom_job import CustomJobRun

pytestmark = pytest.mark.slow


@pytest.fixture
def spawning_threads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[threading.Thread, str]]:
    """``(thread, argv[-1])`` of every replica the runner starts; the real ``spawn`` still runs."""
    seen: list[tuple[threading.Thread, str]] = []
    real = custom_job.spawn

    def recording(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        seen.append((threading.current_thread(), argv[-1]))
        return real(argv, **kwargs)

    monkeypatch.setattr(custom_job, "spawn", recording)
    return seen


def test_replicas_start_and_restart_on_the_jobs_driver_thread(
    env: Any, spawning_threads: list[tuple[threading.Thread, str]]
) -> None:
    store, config, runner = env
    # a worker crash with restartJobOnWorkerRestart: every replica is started twice
    config.faults.crash_replicas = ["workerpool1-*"]
    config.faults.crash_after_s = 0.3
    spec = {
        "workerPoolSpecs": [pool("behave.py", 1, "--sleep", "1.5"), pool("behave.py", 1, "--sleep", "30")],
        "scheduling": {"restartJobOnWorkerRestart": True},
    }
    name = str(store.insert("customJobs", PARENT, {"displayName": "rule", "jobSpec": spec})["name"])
    # submitted from a thread that ends at once, as an API request thread does
    submitter = threading.Thread(target=runner.submit, args=(name,), name="request")
    submitter.start()
    submitter.join()
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    assert len(spawning_threads) == 4  # 2 replicas, each started again once
    threads = {thread for thread, _ in spawning_threads}
    assert len(threads) == 1
    [driver] = threads
    assert isinstance(driver, CustomJobRun) and driver.job_name == name
    assert driver is not submitter and driver is not threading.main_thread()


def test_the_driver_refuses_to_start_a_replica_from_another_thread(
    env: Any, spawning_threads: list[tuple[threading.Thread, str]]
) -> None:
    store, config, runner = env
    spec = {"workerPoolSpecs": [pool("behave.py", 1, "--sleep", "30")]}
    name = str(store.insert("customJobs", PARENT, {"displayName": "rule", "jobSpec": spec})["name"])
    run = CustomJobRun(runner, name)  # a driver whose thread was never started
    run._prepare(spec)
    [slot] = run.slots.values()
    with pytest.raises(RuntimeError, match="driver thread .*parent-death signal"):
        run._start(slot)
    assert slot.proc is None and spawning_threads == []
    assert store.get(name)["state"] == "JOB_STATE_QUEUED"

