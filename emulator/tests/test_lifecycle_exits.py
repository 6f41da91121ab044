"""A replica's end as the service reports it, through the stock clients: exit statuses from signals as
128 + N, with no trace of the emulator's own supervisor in the job's error or the replica's log; which
exits are transient and restart the worker, then the job ("Understand the training service")."""

from __future__ import annotations

import json
from typing import Any

from google.cloud import aiplatform_v1

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, wait_for_state

_DONE = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}


def _run(client: Any, code: str, name: str, **spec: Any) -> Any:
    job = client.create_custom_job(
        parent=PARENT, custom_job=aiplatform_v1.CustomJob.from_json(json.dumps(container_job(name, code, **spec)))
    )
    return wait_for_state(client, job.name, _DONE, timeout=60)


def _replica_log(emulator: Emulator, job: Any, key: str = "workerpool0-0") -> str:
    job_id = job.name.rsplit("/", 1)[-1]
    return (emulator.config.state_dir / "logs" / job_id / f"{key}.log").read_text()


def test_a_replica_killed_with_sigkill_reports_137_and_no_supervisor_trace(
    emulator: Emulator, grpc_client: Any
) -> None:
    """An OOM kill is SIGKILL: the job says 137 (128 + 9), and nothing of the emulator's supervisor
    (a Python traceback) reaches the job's error or the replica's log."""
    job = _run(grpc_client, "import os, signal; print('before', flush=True); os.kill(os.getpid(), signal.SIGKILL)", "oom")
    assert job.state.name == "JOB_STATE_FAILED"
    message = job.error.message
    assert message.startswith("The replica workerpool0-0 exited with a non-zero status of 137.")
    assert "SIGKILL" in message
    assert "Traceback" not in message and "supervise" not in message
    log = _replica_log(emulator, job)
    assert "before" in log
    assert "Traceback" not in log and "supervise" not in log
