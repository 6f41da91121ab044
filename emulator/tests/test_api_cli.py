"""``vertex-emulator``: starts, prints a ready line, serves the stock clients with the
fault flags applied, and on SIGTERM stops cleanly leaving no replica process behind; its ports
(defaults, port 0 for every listener, a busy port named) let two run side by side."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.job_service.transports.grpc import JobServiceGrpcTransport

from vertex_emulator.cli import main
from vertex_emulator.testing import PARENT, container_job, wait_for_state


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_cli_serves_until_sigterm_and_leaves_nothing_behind(tmp_path: Path) -> None:
    argv = [
        sys.executable, "-m", "vertex_emulator",
        "--grpc-port", "0", "--rest-port", "0", "--storage-port", "0", "--state-dir", str(tmp_path / "state"),
        "--fault-rate", "ListCustomJobs=1", "--fault-codes", "RESOURCE_EXHAUSTED", "--seed", "1",
        "--provisioning-seconds", "0",
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        ready = ""
        while not ready.startswith("emulator ready"):
            ready = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        fields = dict(part.split("=", 1) for part in ready.split()[2:])
        assert fields["grpc"].startswith("127.0.0.1:") and fields["rest"].startswith("http://127.0.0.1:")
        assert fields["storage"].startswith("http://127.0.0.1:")
        with pytest.raises(urllib.error.HTTPError) as missing:  # the Cloud Storage API answers
            urllib.request.urlopen(f"{fields['storage']}/storage/v1/b/nope/o", timeout=5)
        assert missing.value.code == 404

        channel = grpc.insecure_channel(fields["grpc"])
        client = aiplatform_v1.JobServiceClient(transport=JobServiceGrpcTransport(channel=channel))
        body = container_job("cli", "import time; time.sleep(120)")
        job = client.create_custom_job(
            parent=PARENT, custom_job=aiplatform_v1.CustomJob.from_json(json.dumps(body))
        )
        with pytest.raises(gexc.ResourceExhausted, match="injected fault"):
            list(client.list_custom_jobs(parent=PARENT))
        web = f"{fields['rest']}/web/{job.name}/workerpool0-0?format=json"
        pid = None
        while pid is None:
            assert time.monotonic() < deadline, "the replica never started"
            try:
                with urllib.request.urlopen(web, timeout=5) as response:
                    pid = json.load(response).get("pid")
            except OSError:
                pass
            if pid is None:
                time.sleep(0.05)
        assert not _gone(pid)
        channel.close()

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        stop_deadline = time.monotonic() + 10
        while not _gone(pid):
            assert time.monotonic() < stop_deadline, f"replica {pid} outlived the emulator"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = []
    while not lines.empty():
        output.append(lines.get())
    assert any("stopping the emulator" in line for line in output), output


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fault-rate", "GetCustomJob=2"], "error_rate.GetCustomJob: must be between 0 and 1"),
        (["--fault-rate", "GetCustomJob"], "expected METHOD=PROBABILITY"),
        (["--fault-codes", "UNAVAILABLE,NOPE"], "error_codes[1]: unknown status code 'NOPE'"),
        (["--image-map", "python:3.11="], "expected IMAGE=COMMAND"),
        (["--grpc-port", "70000"], "--grpc-port: must be from 0 to 65535"),
        (["--latency", "-1"], "latency_s: must be at least 0"),
        (["--storage-port", "-1"], "--storage-port: must be from 0 to 65535"),
        (["--pass-env", "NOT-A-NAME"], "--pass-env: must be a variable name (got 'NOT-A-NAME')"),
    ],
)
def test_cli_rejects_bad_flags(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "ports"),
    [
        ([], (8781, 8780, 8782)),  # the defaults stay when no port is given
        (["--grpc-port", "0", "--rest-port", "0"], (0, 0, 0)),  # free ports beside free ports
        (["--rest-port", "0"], (8781, 0, 0)),
        (["--grpc-port", "0", "--rest-port", "0", "--storage-port", "8790"], (0, 0, 8790)),
        (["--storage-port", "0"], (8781, 8780, 0)),
        (["--grpc-port", "9001", "--rest-port", "9000"], (9001, 9000, 8782)),
    ],
)
def test_ports_and_the_storage_port_rule(argv: list[str], ports: tuple[int, int, int]) -> None:
    from vertex_emulator.cli import parse_config

    config = parse_config(argv)
    assert (config.grpc_port, config.rest_port, config.storage_port) == ports


WRITE_OBJECT = """
import sys
from google.cloud import storage
storage.Client().bucket("bkt").blob("who.txt").upload_from_string(sys.argv[1])
"""


def _start(tmp: Path, *flags: str) -> tuple[subprocess.Popen[str], dict[str, str], list[str]]:
    """``python -m vertex_emulator`` with ``flags``; (the process, its ready line's fields, its banner)."""
    argv = [sys.executable, "-m", "vertex_emulator", "--state-dir", str(tmp), *flags]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    banner: list[str] = []
    deadline = time.monotonic() + 60
    for line in proc.stdout or []:
        banner.append(line)
        if line.startswith("emulator ready"):
            return proc, dict(part.split("=", 1) for part in line.split()[2:]), banner
        assert time.monotonic() < deadline, banner
    proc.wait(timeout=10)
    raise AssertionError(f"the emulator did not start: {''.join(banner)}")


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_two_emulators_run_side_by_side_and_a_busy_port_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--grpc-port 0 --rest-port 0`` gives every listener a free port (the Cloud Storage API bound
    8782 and a second emulator failed with "Address already in use", naming no port); a port that is
    taken is named; the ``/ui/`` address the banner prints answers with the finished jobs."""
    running = []
    try:
        for which in ("a", "b"):
            (tmp_path / which / "gcs" / "bkt").mkdir(parents=True)  # a bucket is a directory
            running.append((which, *_start(tmp_path / which, "--grpc-port", "0", "--rest-port", "0")))
        (_, _, a, _), (_, _, b, _) = running
        assert len({a["grpc"], b["grpc"]}) == 2 and len({a["rest"], b["rest"]}) == 2
        assert a["storage"] != b["storage"] and not {a["storage"], b["storage"]} & {"http://127.0.0.1:8782"}
        for which, _, fields, banner in running:
            channel = grpc.insecure_channel(fields["grpc"])
            client = aiplatform_v1.JobServiceClient(transport=JobServiceGrpcTransport(channel=channel))
            body = container_job(f"side-{which}", WRITE_OBJECT)
            body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] = [which]
            job = client.create_custom_job(
                parent=PARENT, custom_job=aiplatform_v1.CustomJob.from_json(json.dumps(body))
            )
            done = wait_for_state(client, job.name, ["JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"], timeout=120)
            assert done.state.name == "JOB_STATE_SUCCEEDED", done.error.message
            channel.close()
            # each job wrote through its own emulator's Cloud Storage API, into its own gs:// root
            assert (tmp_path / which / "gcs" / "bkt" / "who.txt").read_text() == which
            index_url = next(line.split()[1] for line in banner if line.strip().startswith("jobs:"))
            assert index_url == fields["rest"] + "/ui/"
            with urllib.request.urlopen(index_url, timeout=10) as response:
                page = response.read().decode()
            assert f"/ui/{job.name}" in page and "JOB_STATE_SUCCEEDED" in page and f"side-{which}" in page

        # a port that is taken: the listener, the address and the reason, exit status 1
        taken = {
            "--grpc-port": ("the gRPC API", a["grpc"]),
            "--rest-port": ("the REST API", a["rest"].removeprefix("http://")),
            "--storage-port": ("the Cloud Storage API", a["storage"].removeprefix("http://")),
        }
        for flag, (what, address) in taken.items():
            ports = {"--grpc-port": "0", "--rest-port": "0", "--storage-port": "0"}
            ports[flag] = address.rsplit(":", 1)[1]
            argv = ["--state-dir", str(tmp_path / "c"), *(x for kv in ports.items() for x in kv)]
            assert main(argv) == 1
            err = capsys.readouterr().err
            assert f"cannot bind {what} on {address}: Address already in use" in err, err
    finally:
        for _, proc, _, _ in running:
            _stop(proc)
