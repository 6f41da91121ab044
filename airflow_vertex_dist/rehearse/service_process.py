"""The emulator a rehearsal plays its night on: a ``vertex-emulator`` process of its own.

It is started with this interpreter (``python -m vertex_emulator``: the emulator distribution must be
installed beside the provider), on free loopback ports, its state and ``gs://`` files under the
rehearsal's directory, with no scenario: the night is played (``PUT /emulator/scenario``) only once
Airflow is ready to run, so the minutes Airflow takes to start are not hours of the night. The file is
first checked by the emulator's own rules (``python -m vertex_emulator.scenario check``): an error
names the file's line. The provider only meets the emulator over the wire, as it meets Vertex AI.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["EmulatorProcess", "RehearsalError", "check_scenario"]

_READY = re.compile(r"emulator ready grpc=(?P<grpc>\S+) rest=(?P<rest>\S+) storage=(?P<storage>\S+)")
_START_TIMEOUT_S = 120.0  # Airflow processes may be starting beside it on a busy machine
_STOP_GRACE_S = 30.0
_NOT_INSTALLED = (
    "the Vertex AI emulator is not installed in this environment ({python}): install the vertex-emulator "
    "distribution beside the provider to rehearse"
)


class RehearsalError(RuntimeError):
    """A rehearsal that cannot start or run: the message says what and how to fix it."""


def _emulator_installed() -> bool:
    probe = [
        sys.executable,
        "-c",
        "import importlib.util, sys; sys.exit(not importlib.util.find_spec('vertex_emulator'))",
    ]
    return subprocess.run(probe, check=False, capture_output=True).returncode == 0


def check_scenario(path: Path) -> dict[str, Any]:
    """The scenario file at ``path`` checked by the emulator's rules, as the JSON its admin API plays."""
    if not _emulator_installed():
        raise RehearsalError(_NOT_INSTALLED.format(python=sys.executable))
    done = subprocess.run(
        [sys.executable, "-m", "vertex_emulator.scenario", "check", str(path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RehearsalError(f"--scenario: {done.stderr.strip() or 'refused'}")
    document: dict[str, Any] = json.loads(done.stdout)
    return document


@dataclass
class EmulatorProcess:
    """A running emulator: its gRPC target, REST (web) URL, Cloud Storage URL and ``gs://`` root."""

    grpc_target: str
    rest_url: str
    storage_url: str
    gcs_root: Path
    process: subprocess.Popen[bytes]
    log_path: Path

    @classmethod
    def start(cls, workdir: Path, extra_args: Sequence[str] = ()) -> EmulatorProcess:
        """Start one under ``workdir`` (``state/``, ``gcs/``, ``emulator.log``) and wait until it is ready."""
        if not _emulator_installed():
            raise RehearsalError(_NOT_INSTALLED.format(python=sys.executable))
        workdir.mkdir(parents=True, exist_ok=True)
        gcs_root, log_path = workdir / "gcs", workdir / "emulator.log"
        command = [sys.executable, "-m", "vertex_emulator", "--grpc-port", "0", "--rest-port", "0"]
        command += ["--storage-port", "0", "--state-dir", str(workdir / "state"), "--gcs-root", str(gcs_root)]
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [*command, *extra_args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            text = log_path.read_text(errors="replace")
            found = _READY.search(text)
            if found:
                return cls(found["grpc"], found["rest"], found["storage"], gcs_root, process, log_path)
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RehearsalError(f"the emulator did not start ({' '.join(command)}):\n{text[-2000:]}")
            time.sleep(0.1)

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        """An admin call (``/emulator/...``): the decoded JSON answer; ``RehearsalError`` naming the
        emulator's message when it refuses."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.rest_url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 (the emulator's URL)
                return json.loads(answer.read())
        except urllib.error.HTTPError as err:
            raise RehearsalError(f"{method} {path}: {err.read().decode(errors='replace')[:2000]}") from None

    def stop(self) -> int | None:
        """SIGTERM (the emulator stops every replica it started), SIGKILL to its group after a grace."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        return self.process.returncode
