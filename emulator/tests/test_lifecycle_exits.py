"""A replica's end as the service reports it, through the stock clients: exit statuses from signals as
128 + N, with no trace of the emulator's own supervisor in the job's error or the replica's log; which
exits are transient and restart the worker, then the job ("Understand the training service")."""

from __future__ import annotations

import json
from typing import Any

from google.cloud import aiplatform_v1

from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, wait_for_state

_DONE = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}


def _run(client: Any, code: str, name: str, **spec: Any) -> Any:
    job = client.create_custom_job(
        parent=PARENT,
        custom_job=aiplatform_v1.CustomJob.from_json(json.dumps(container_job(name, code, **spec))),
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
    code = "import os, signal; print('before', flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    job = _run(grpc_client, code, "oom")
    assert job.state.name == "JOB_STATE_FAILED"
    message = job.error.message
    assert message.startswith("The replica workerpool0-0 exited with a non-zero status of 137.")
    assert "SIGKILL" in message
    assert "Traceback" not in message and "supervise" not in message
    log = _replica_log(emulator, job)
    assert "before" in log
    assert "Traceback" not in log and "supervise" not in log


# A trainer that dies of ``sig`` on its first ``fails`` starts (it counts them in a file next to its
# working directory: every start of the replica runs in the same one), then succeeds.
_FLAKY = (
    "import os, pathlib, signal, sys\n"
    "p = pathlib.Path(os.environ['COUNT_FILE'])\n"
    "n = int(p.read_text()) if p.exists() else 0\n"
    "p.write_text(str(n + 1))\n"
    "print('start', n + 1, 'host', os.environ['CLUSTER_SPEC'][:0], flush=True)\n"
    "if n < int(sys.argv[1]): os.kill(os.getpid(), getattr(signal, sys.argv[2]))\n"
)


def _flaky_job(name: str, count_file: str, fails: int, sig: str, **spec: Any) -> dict[str, Any]:
    body = container_job(name, _FLAKY, **spec)
    container = body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    container["args"] = [str(fails), sig]
    container["env"] = [{"name": "COUNT_FILE", "value": count_file}]
    return body


def _create(client: Any, body: dict[str, Any]) -> Any:
    job = client.create_custom_job(
        parent=PARENT, custom_job=aiplatform_v1.CustomJob.from_json(json.dumps(body))
    )
    return wait_for_state(client, job.name, _DONE, timeout=90)


def test_a_transient_exit_restarts_the_worker_in_place_and_the_job_goes_on(
    emulator: Emulator, rest_client: Any, tmp_path: Any
) -> None:
    """SIGABRT and SIGSEGV are not a common (permanent) error: Vertex AI restarts the worker in the same
    VM, same hostname, and the job goes on RUNNING (understanding-training-service, "Non-zero exits")."""
    for sig in ("SIGABRT", "SIGSEGV"):
        count = tmp_path / f"{sig}.count"
        job = _create(rest_client, _flaky_job(f"flaky-{sig}", str(count), 2, sig))
        assert job.state.name == "JOB_STATE_SUCCEEDED", job.error.message
        assert count.read_text() == "3"  # two deaths, two restarts in place, then success
        log = _replica_log(emulator, job)
        assert "---- emulator: restart 2 of workerpool0-0 ----" in log


def test_a_transient_exit_past_the_limits_fails_the_job_after_five_worker_restarts_and_three_job_retries(
    emulator: Emulator, grpc_client: Any, tmp_path: Any
) -> None:
    """Up to five restarts per worker; then Vertex AI retries the entire job up to three times before it
    fails it: (1 + 5) starts per attempt, 4 attempts."""
    count = tmp_path / "abort.count"
    job = _create(grpc_client, _flaky_job("always-aborts", str(count), 1000, "SIGABRT"))
    assert job.state.name == "JOB_STATE_FAILED"
    assert job.error.message.startswith("The replica workerpool0-0 exited with a non-zero status of 134.")
    assert "SIGABRT" in job.error.message
    assert count.read_text() == str(6 * 4)


def test_a_common_error_still_fails_the_job_at_once(
    emulator: Emulator, grpc_client: Any, tmp_path: Any
) -> None:
    """An exit status the training code chose (1) and SIGKILL are permanent: the job fails on the first."""
    for sig, status in (("SIGKILL", 137),):
        count = tmp_path / f"{sig}.count"
        job = _create(grpc_client, _flaky_job(f"perm-{sig}", str(count), 5, sig))
        assert job.state.name == "JOB_STATE_FAILED" and f"status of {status}." in job.error.message
        assert count.read_text() == "1"
    job = _run(grpc_client, "import sys; sys.exit(1)", "exit-1")
    assert job.state.name == "JOB_STATE_FAILED" and "status of 1." in job.error.message


def test_restart_job_on_worker_restart_restarts_the_whole_job_on_a_transient_exit(
    emulator: Emulator, grpc_client: Any, tmp_path: Any
) -> None:
    """With ``scheduling.restartJobOnWorkerRestart`` a worker's restart restarts the entire job (v1
    Scheduling: "Restarts the entire CustomJob if a worker gets restarted")."""
    count = tmp_path / "whole.count"
    body = _flaky_job("whole", str(count), 1, "SIGSEGV", workers=1)
    body["jobSpec"]["scheduling"] = {"restartJobOnWorkerRestart": True}
    body["jobSpec"]["workerPoolSpecs"][1]["containerSpec"]["command"][-1] = "import time; time.sleep(60)"
    job = _create(grpc_client, body)
    assert job.state.name == "JOB_STATE_SUCCEEDED", job.error.message
    assert "---- emulator: restart 1 of workerpool1-0 ----" in _replica_log(emulator, job, "workerpool1-0")


def test_replicas_get_the_project_and_region_the_service_sets(emulator: Emulator, grpc_client: Any) -> None:
    """Vertex AI sets ``CLOUD_ML_PROJECT_ID`` (the SDK infers the project from it inside a job) and
    ``CLOUD_ML_REGION``: the project and location of the job's resource name."""
    code = (
        "import os; print('project=' + os.environ.get('CLOUD_ML_PROJECT_ID', '-'),"
        " 'region=' + os.environ.get('CLOUD_ML_REGION', '-'), flush=True)"
    )
    job = _run(grpc_client, code, "env")
    assert job.state.name == "JOB_STATE_SUCCEEDED"
    project, location = job.name.split("/")[1], job.name.split("/")[3]
    assert f"project={project} region={location}" in _replica_log(emulator, job)


def test_the_command_applies_a_provisioning_delay_by_default(tmp_path: Any) -> None:
    """``vertex-emulator`` (the command) keeps a job PENDING for ``--provisioning-seconds`` (default
    ``DEFAULT_PROVISIONING_S``) once its capacity is granted, as Vertex AI provisions its VMs; the
    in-process helpers (this suite) start at 0."""
    from vertex_emulator.cli.config import config_from_args
    from vertex_emulator.cli.flags import DEFAULT_PROVISIONING_S, build_parser

    parser = build_parser()
    args = parser.parse_args(["--state-dir", str(tmp_path / "s")])
    assert config_from_args(args, parser).faults.provisioning_s == DEFAULT_PROVISIONING_S > 0
    args = parser.parse_args(["--state-dir", str(tmp_path / "s"), "--provisioning-seconds", "0"])
    assert config_from_args(args, parser).faults.provisioning_s == 0


def test_a_job_stays_pending_while_it_is_provisioned(emulator: Emulator, rest_client: Any) -> None:
    """The provisioning delay is a fault setting, changeable at runtime; the job shows PENDING meanwhile."""
    import time

    with emulator.config.faults.lock:
        emulator.config.faults.provisioning_s = 1.5
    job = rest_client.create_custom_job(
        parent=PARENT, custom_job=aiplatform_v1.CustomJob.from_json(json.dumps(container_job("prov", "pass")))
    )
    started = time.monotonic()
    wait_for_state(rest_client, job.name, {"JOB_STATE_PENDING"}, timeout=10)
    done = wait_for_state(rest_client, job.name, _DONE, timeout=30)
    assert done.state.name == "JOB_STATE_SUCCEEDED"
    assert time.monotonic() - started >= 1.4
