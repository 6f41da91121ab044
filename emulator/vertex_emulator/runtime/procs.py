"""Replica processes: start each under its own supervisor, stop a replica's whole tree, find leftovers.

Every replica is started from an argv list (never through a shell) under a small supervisor process
(supervise.py, run as ``python -I -S supervise.py <emulator pid> <grace> <records> <argv...>``) in a new
session. On Linux the supervisor is a *child subreaper*: whatever the replica forks -- torchrun's
workers, DataLoader workers, a shell wrapper, a grandchild that calls ``setsid`` or double-forks --
stays in the supervisor's tree, so stopping the replica stops all of it:

- ``stop`` sends SIGTERM to the supervisor, which passes it to every process of the tree, waits the
  grace period and SIGKILLs what is left; the supervisor then exits with the replica's status.
- when the replica's main process ends, the supervisor SIGKILLs the rest of its tree (as a container
  ends with its main process) before it exits.
- ``crash`` (fault injection) makes the supervisor SIGKILL the main process (then the tree).
- if the emulator dies (even ``kill -9``), the parent-death signal (``PR_SET_PDEATHSIG``) sends
  SIGTERM to every supervisor, which stops its tree as above; each replica's main process also has
  ``PR_SET_PDEATHSIG = SIGKILL`` towards its supervisor.

The supervisor is started rather than set up in a ``preexec_fn``: running Python code between fork
and exec in a process with gRPC threads crashes the child now and then (seen: SIGSEGV before exec).
The death signal fires when the *thread* that started the supervisor exits, which is why the runner
starts and restarts a job's replicas from that job's own driver thread (the thread rule, driver.py).

``leftovers`` finds what a dead emulator left behind, for ``Runner.recover()``: processes whose
environment carries the replica's ``CLOUD_ML_HP_METRIC_FILE`` (a path under the emulator's state
directory, unique to one replica of one job; every process of a replica's tree inherits it unless
it replaces its whole environment).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from vertex_emulator.runtime.log_records import RECORDS_SUFFIX

__all__ = ["crash", "free_ports", "kill_leftovers", "leftovers", "read_tail", "spawn", "stop"]

_SUPERVISOR = Path(__file__).with_name("supervise.py")
#: extra seconds the runner gives a supervisor beyond the grace period before it kills the group
_MARGIN_S = 2.0


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports that were free on ``host`` a moment ago.

    All sockets are bound at once before any is closed, so the ports are distinct; another program
    could still take one before the replica binds it (a small window, accepted).
    """
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    log: IO[bytes],
    grace_s: float,
    records: bool = True,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` (no shell) under its supervisor, in a new session, output appended to ``log``.

    The supervisor also writes the replica's structured log beside ``log`` (every line with its stream
    and time: ``<name>.jsonl`` for ``<name>.log``; supervise.py, log_records.py) unless ``records`` is
    false (a package install: its output is not a replica's log). The returned
    process is the supervisor: its exit status is the replica's.
    """
    if not argv:
        raise ValueError("argv must not be empty")
    grace = f"{max(0.0, grace_s):g}"
    path = Path(str(log.name)).with_suffix(RECORDS_SUFFIX) if records and isinstance(log.name, str) else ""
    return subprocess.Popen(
        [sys.executable, "-I", "-S", str(_SUPERVISOR), str(os.getpid()), grace, str(path), *argv],
        env=dict(env),
        cwd=str(cwd),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
    )


def crash(proc: subprocess.Popen[bytes]) -> None:
    """Kill the replica's main process at once (SIGKILL), as a crash would; the supervisor ends the tree."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(proc.pid, signal.SIGUSR1)


def stop(procs: Sequence[subprocess.Popen[bytes]], grace_s: float) -> None:
    """Stop every replica in ``procs`` at once and reap them.

    Each supervisor gets SIGTERM (it passes it to its tree and SIGKILLs the tree after ``grace_s``);
    a supervisor still running ``grace_s`` + 2 s later has its process group SIGKILLed.
    """
    for proc in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + max(0.0, grace_s) + _MARGIN_S
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def leftovers(prefix: str) -> list[int]:
    """Live processes (not zombies, not this one) with an environment entry starting with ``prefix``
    (``NAME=value...``: the variable ``NAME``, its value starting with ``value...``)."""
    import psutil

    name, _, value = prefix.partition("=")
    me = os.getpid()
    out: list[int] = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            found = proc.environ().get(name)
            if found is None or not found.startswith(value) or proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.Error:  # gone, a zombie, or not ours to read
            continue
        out.append(proc.pid)
    return out


def kill_leftovers(prefix: str, timeout_s: float = 5.0) -> tuple[int, list[int]]:
    """SIGKILL every process ``leftovers`` finds until none is left or ``timeout_s`` passes.

    Returns how many processes were killed and the pids still alive at the end (``[]``: none).
    """
    killed: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while True:
        pids = leftovers(prefix)
        if not pids or time.monotonic() >= deadline:
            return len(killed), pids
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        time.sleep(0.05)


def read_tail(path: Path, lines: int = 20, max_bytes: int = 64 * 1024) -> list[str]:
    """The last ``lines`` lines of a text file (``[]`` when it does not exist), decoded leniently."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except FileNotFoundError:
        return []
    text = data.decode("utf-8", errors="replace")
    out = text.splitlines()
    if size > max_bytes and out:
        out = out[1:]  # the first line is probably cut
    return out[-lines:] if lines > 0 else []
