"""``vertex-emulator``: starts, prints a ready line, serves the stock clients with the
fault flags applied, and on SIGTERM stops cleanly leaving no replica process behind."""

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
from vertex_emulator.testing import PARENT, container_job


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
