"""Security properties that hold without a running Airflow:

* no subprocess call in the package takes a shell string (AST scan: no ``shell=True``, no
  ``os.system``/``os.popen``, no ``subprocess.getoutput``, no ``create_subprocess_shell``, no string
  command to a ``subprocess`` function);
* the emulator, as its CLI starts it, listens on loopback only, and its state dir is private (0700)
  even when it existed before with looser modes;
* credentials are never serialized into trigger kwargs: every trigger's constructor takes no
  credential, and the triggers the operators and sensors hand to the triggerer -- built after their
  hook loaded a connection carrying a key JSON -- serialize only the connection id.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import airflow_vertex_dist

PACKAGE = Path(airflow_vertex_dist.__file__).parent
SUBPROCESS_FUNCS = {"run", "call", "check_call", "check_output", "Popen"}
CANARY = "avd-canary-0c9d8e7f"


def shell_violations(source: str, filename: str = "<string>") -> list[str]:
    """``file:line: what`` for every call that would run a command through a shell."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        func = ast.unparse(node.func)
        where = f"{filename}:{node.lineno}"
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                found.append(f"{where}: {func}(shell=...)")
        if func in ("os.system", "os.popen", "system", "popen") or func.endswith(
            ("getoutput", "getstatusoutput", "create_subprocess_shell", "os.execl", "os.spawnl")
        ):
            found.append(f"{where}: {func}()")
        short = func.rsplit(".", 1)[-1]
        if (
            short in SUBPROCESS_FUNCS
            and func.startswith(("subprocess.", "Popen", "run", "check_"))
            and node.args
        ):
            first = node.args[0]
            if isinstance(first, ast.JoinedStr) or (
                isinstance(first, ast.Constant) and isinstance(first.value, str)
            ):
                found.append(f"{where}: {func}() with a string command")
    return found


def test_the_scan_catches_shell_calls() -> None:
    bad = (
        "import os, subprocess, asyncio\n"
        "subprocess.run('ls', shell=True)\n"
        "subprocess.Popen(['ls'], shell=flag)\n"
        "os.system('ls')\n"
        "os.popen('ls')\n"
        "subprocess.check_output(f'ls {x}')\n"
        "subprocess.getoutput('ls')\n"
        "asyncio.create_subprocess_shell('ls')\n"
    )
    flagged = {int(v.split(":")[1]) for v in shell_violations(bad)}
    assert flagged == {2, 3, 4, 5, 6, 7, 8}
    assert shell_violations("import subprocess\nsubprocess.run(['ls'], shell=False, check=True)\n") == []


def test_no_shell_string_anywhere_in_the_package() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 40
    violations = [v for f in files for v in shell_violations(f.read_text(), str(f.relative_to(PACKAGE)))]
    assert violations == []


# -- the emulator's sockets and state dir ------------------------------------------------------------


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket ``pid`` listens on, from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            parts = line.split()
            if parts[3] != "0A" or parts[9] not in inodes:  # 0A: LISTEN
                continue
            hex_addr, hex_port = parts[1].split(":")
            assert len(hex_addr) == width
            if width == 32 and hex_addr.startswith("0000000000000000FFFF0000"):  # IPv4-mapped IPv6
                hex_addr, width = hex_addr[24:], 8
            if width == 8:  # one little-endian 32-bit word
                addr = ".".join(str(int(hex_addr[i : i + 2], 16)) for i in (6, 4, 2, 0))
            elif hex_addr == "00000000000000000000000001000000":
                addr = "::1"
            else:
                addr = "ipv6:" + hex_addr
            found.add((addr, int(hex_port, 16)))
    return found


@pytest.fixture
def emulator_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)  # a state dir a user made by hand, world-readable
    proc = subprocess.Popen(
        [sys.executable, "-m", "vertex_emulator.cli", "--state-dir", str(state),
         "--rest-port", "0", "--grpc-port", "0", "--storage-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        yield proc, state
    finally:
        proc.terminate()
        proc.wait(30)


def test_emulator_binds_loopback_only_and_keeps_its_state_private(
    emulator_process: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, state = emulator_process
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    ready = ""
    while not ready and time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line or proc.poll() is None, "emulator exited"
        if line.startswith("emulator ready "):
            ready = line
    assert ready, "no ready line"
    ports = {int(m) for m in re.findall(r":(\d+)", ready)}
    addresses = listening_addresses(proc.pid)
    assert {port for _, port in addresses} >= ports, addresses
    assert {addr for addr, _ in addresses} <= {"127.0.0.1", "::1"}, addresses
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    for path in state.rglob("*"):  # nothing in it is writable by others
        assert not stat.S_IMODE(path.stat().st_mode) & 0o002, path


# -- trigger kwargs -------------------------------------------------------------------------------------

CREDENTIAL_WORDS = ("credential", "keyfile", "key_path", "key_json", "token", "secret", "password", "private")


def trigger_classes() -> list[type]:
    from airflow.triggers.base import BaseTrigger

    from airflow_vertex_dist.triggers import jobs, sensors

    classes = []
    for module in (jobs, sensors):
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseTrigger) and obj.__module__ == module.__name__:
                classes.append(obj)
    return classes


def test_no_trigger_constructor_takes_a_credential() -> None:
    classes = trigger_classes()
    assert {c.__name__ for c in classes} >= {
        "VertexJobTrigger",
        "VertexJobStateTrigger",
        "VertexTrialTrigger",
    }
    for cls in classes:
        params = set(inspect.signature(cls.__init__).parameters)
        for base in cls.__mro__[1:]:
            if base.__module__.startswith("airflow_vertex_dist"):
                params |= set(inspect.signature(base.__init__).parameters)
        bad = {p for p in params if any(word in p.lower() for word in CREDENTIAL_WORDS)}
        assert not bad, f"{cls.__name__} takes {sorted(bad)}"


def test_triggers_handed_to_the_triggerer_carry_no_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_vertex_dist.operators.training import VertexTrainingOperator
    from airflow_vertex_dist.sensors.jobs import VertexJobSensor, VertexReplicaSensor
    from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

    key = {"type": "service_account", "private_key": CANARY, "client_email": "sa@p.iam.gserviceaccount.com"}
    extra = {"project": "p", "location": "us-central1", "keyfile_dict": json.dumps(key)}
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT", json.dumps({"conn_type": "vertex_dist", "extra": extra})
    )
    spec = DistributedTrainingJob(
        display_name="t",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            replica_count=1,
            container=Container(image_uri="python:3.11", command=("python", "-c", "pass")),
        ),
    )
    name = "projects/p/locations/us-central1/customJobs/123"
    op = VertexTrainingOperator(task_id="train", spec=spec, deferrable=True)
    job_sensor = VertexJobSensor(task_id="wait", job_name=name, deferrable=True)
    replica_sensor = VertexReplicaSensor(
        task_id="up", job_name=name, replicas=["workerpool0-0"], deferrable=True
    )
    for owner in (op, job_sensor, replica_sensor):
        assert owner.hook.connection.keyfile_dict  # the hook did load the key JSON
        classpath, kwargs = owner.make_trigger(name).serialize()
        text = json.dumps(kwargs, default=str)
        assert CANARY not in text and "service_account" not in text, classpath
        assert not any(word in k.lower() for k in kwargs for word in CREDENTIAL_WORDS), kwargs
        assert kwargs["conn_id"] == "vertex_dist_default"
