"""Spot preemption (scheduling.strategy SPOT): a preempted replica gets SIGTERM, then SIGKILL after the
notice; the whole job is restarted, staying RUNNING, up to ``spot_restart_limit`` times ("Compute
Engine tries to restart the job up to six times"), after which a preemption fails the job. Preemptions
come from ``POST /emulator/capacity/preempt``, ``spot_preempt_after_s`` or ``spot_preemptions_per_hour``.
Job states through the stock clients, gRPC and REST."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from capacity_support import admin, client_for, gpu_job, service_lines, wait_for_file_lines
from google.cloud.aiplatform_v1 import CustomJob

from vertex_emulator.capacity.gpus import preempted_message
from vertex_emulator.core.config import Capacity, Faults
from vertex_emulator.testing import PARENT, running_emulator, wait_for_state

PREEMPT = "/emulator/capacity/preempt"


def _trainer(record: Path, flag: Path, *, on_sigterm: str) -> str:
    """Replica code: record each start (and each SIGTERM), then run until ``flag`` exists. On SIGTERM it
    ``exit``s 0 (a trainer that checkpoints and leaves) or ``ignore``s it (only SIGKILL stops it)."""
    handler = {
        "exit": "def term(*_):\n    note('sigterm')\n    sys.exit(0)\nsignal.signal(signal.SIGTERM, term)\n",
        "ignore": "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n",
    }[on_sigterm]
    return (
        "import os, signal, sys, time\n"
        f"def note(what):\n    with open({str(record)!r}, 'a') as fh: fh.write(what + '\\n')\n"
        f"{handler}"
        "note('start')\n"
        f"while not os.path.exists({str(flag)!r}): time.sleep(0.02)\n"
    )


def _create(client: Any, body: dict[str, Any]) -> Any:
    return client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body)))


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_preempted_spot_job_restarts_then_fails_past_the_limit(tmp_path: Path, transport: str) -> None:
    record, flag = tmp_path / "record", tmp_path / "never"
    capacity = Capacity(spot_restart_limit=1, spot_notice_s=5)
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, transport) as client:
        job = _create(client, gpu_job("spot", _trainer(record, flag, on_sigterm="exit"), strategy="SPOT"))
        wait_for_state(client, job.name, ["JOB_STATE_RUNNING"])
        wait_for_file_lines(record, 1)
        assert admin(em, "GET", "/emulator/stats")[1]["gpus"]["spot_jobs"] == [job.name]

        status, answer = admin(em, "POST", PREEMPT, {"job": job.name})
        assert (status, answer) == (200, {"job": job.name, "replica": "workerpool0-0", "preempted": True})
        # SIGTERM, the trainer leaves (exit 0: not a success), the job is started again
        assert wait_for_file_lines(record, 3) == ["start", "sigterm", "start"]
        assert client.get_custom_job(name=job.name).state.name == "JOB_STATE_RUNNING"
        view = em.runner.replica_view(job.name, "workerpool0-0")
        assert view is not None and view["restarts"] == 1 and view["state"] == "RUNNING"
        warnings = [r["m"] for r in service_lines(em, job.name) if r.get("sev") == "WARNING"]
        assert warnings == [
            "The replica workerpool0-0 was preempted: Compute Engine reclaimed its Spot VM (STOCKOUT). "
            "Restarting the job (restart 1 of at most 1)."
        ]

        assert admin(em, "POST", PREEMPT, {"job": job.name, "replica": "workerpool0-0"})[0] == 200
        failed = wait_for_state(client, job.name, ["JOB_STATE_FAILED"])
        assert (failed.error.code, failed.error.message) == (8, preempted_message("workerpool0-0", 1))
        assert "STOCKOUT" in failed.error.message
        assert wait_for_file_lines(record, 4) == ["start", "sigterm", "start", "sigterm"]
        status, refused = admin(em, "POST", PREEMPT, {"job": job.name})  # over: nothing to preempt
        assert status == 400 and refused["error"]["status"] == "FAILED_PRECONDITION"


def test_the_preemption_timer_and_the_notice(tmp_path: Path) -> None:
    """``spot_preempt_after_s`` preempts the primary after each start; a trainer that ignores SIGTERM is
    SIGKILLed after ``spot_notice_s``; past ``spot_restart_limit`` restarts the job fails."""
    record, flag = tmp_path / "record", tmp_path / "never"
    capacity = Capacity(spot_preempt_after_s=0.2, spot_notice_s=0.2, spot_restart_limit=2)
    with (
        running_emulator(tmp_path, capacity=capacity, stop_grace_s=0.2) as em,
        client_for(em, "grpc") as client,
    ):
        job = _create(
            client, gpu_job("spot-timer", _trainer(record, flag, on_sigterm="ignore"), strategy="SPOT")
        )
        failed = wait_for_state(client, job.name, ["JOB_STATE_FAILED"], timeout=60)
        assert (failed.error.code, failed.error.message) == (8, preempted_message("workerpool0-0", 2))
        view = em.runner.replica_view(job.name, "workerpool0-0")
        assert view is not None and view["restarts"] == 2
        # each incarnation that got as far as its first line ignored SIGTERM: none left on its own
        lines = record.read_text().split() if record.exists() else []
        assert set(lines) <= {"start"}


def test_a_preemption_rate_preempts_at_random(tmp_path: Path) -> None:
    record, flag = tmp_path / "record", tmp_path / "never"
    capacity = Capacity(spot_preemptions_per_hour=3600, spot_restart_limit=0, spot_notice_s=1)
    with (
        running_emulator(tmp_path, capacity=capacity, faults=Faults(seed=5)) as em,
        client_for(em, "rest") as client,
    ):
        job = _create(
            client, gpu_job("spot-rate", _trainer(record, flag, on_sigterm="exit"), strategy="SPOT")
        )
        failed = wait_for_state(client, job.name, ["JOB_STATE_FAILED"], timeout=60)
        assert failed.error.message == preempted_message("workerpool0-0", 0)
        # an on-demand job is never preempted, whatever the rate
        steady = _create(client, gpu_job("on-demand", "import time; time.sleep(1)"))
        assert wait_for_state(client, steady.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


def test_preempt_requests_that_cannot_be_met(tmp_path: Path) -> None:
    record, flag = tmp_path / "record", tmp_path / "release"
    with running_emulator(tmp_path) as em, client_for(em, "grpc") as client:
        standard = _create(client, gpu_job("on-demand", _trainer(record, flag, on_sigterm="exit")))
        spot = _create(
            client, gpu_job("spot", _trainer(tmp_path / "spot", flag, on_sigterm="exit"), strategy="SPOT")
        )
        for name in (standard.name, spot.name):
            wait_for_state(client, name, ["JOB_STATE_RUNNING"])
        for body, status, code, fragment in [
            ({"job": standard.name}, 400, "FAILED_PRECONDITION", "is not running on Spot VMs"),
            (
                {"job": spot.name, "replica": "workerpool1-0"},
                404,
                "NOT_FOUND",
                "has no replica 'workerpool1-0'",
            ),
            ({"replica": "workerpool0-0"}, 400, "INVALID_ARGUMENT", "job: required"),
            ({"job": spot.name, "when": "now"}, 400, "INVALID_ARGUMENT", "when: unknown field"),
        ]:
            got, answer = admin(em, "POST", PREEMPT, body)
            assert (got, answer["error"]["status"]) == (status, code), answer
            assert fragment in answer["error"]["message"]
        flag.touch()
        for name in (standard.name, spot.name):
            assert wait_for_state(client, name, ["JOB_STATE_SUCCEEDED"]).error.code == 0
