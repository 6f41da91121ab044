"""Replica processes: spawn in their own process group, stop a whole group, read a log's tail.

Every replica is started from an argv list (never through a shell) with ``start_new_session=True``,
so it leads its own process group and everything it forks can be stopped together: ``stop_group``
sends SIGTERM to the group, waits a grace period, then SIGKILLs what is left.

On Linux each replica also gets ``PR_SET_PDEATHSIG = SIGKILL`` (set with ``prctl`` through ctypes in
the child between fork and exec), so it dies if the emulator dies without cleaning up (SIGKILL,
OOM...). The signal fires when the *thread* that started the child exits, which is why the runner
starts, restarts and stops a job's replicas from that job's own driver thread. It reaches the direct
child only: grandchildren a replica forks are stopped through the process group on every orderly
path, and on a crash of the emulator ``recover()`` stops groups it finds recorded in the state dir.
Elsewhere (no prctl) the death signal is skipped.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

__all__ = ["free_ports", "group_alive", "read_tail", "spawn", "stop_group"]

_PR_SET_PDEATHSIG = 1
_libc: ctypes.CDLL | None = None
if sys.platform.startswith("linux"):
    with contextlib.suppress(OSError):
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_prctl = _libc.prctl if _libc is not None else None


def _die_with_parent(parent_pid: int) -> None:
    """Runs in the child after fork: ask the kernel for SIGKILL when the parent thread goes."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl: do not outlive it
            os._exit(137)


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
) -> subprocess.Popen[bytes]:
    """Start ``argv`` (no shell) in a new session with stdout+stderr appended to ``log``."""
    if not argv:
        raise ValueError("argv must not be empty")
    parent = os.getpid()
    return subprocess.Popen(
        list(argv),
        env=dict(env),
        cwd=str(cwd),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
        preexec_fn=(lambda: _die_with_parent(parent)) if _prctl is not None else None,
    )


def group_alive(pgid: int) -> bool:
    """True while any process of group ``pgid`` exists (zombies of our own children included)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(proc: subprocess.Popen[bytes], grace_s: float) -> int:
    """SIGTERM the process group of ``proc``, SIGKILL it after ``grace_s``; reap ``proc``.

    Safe to call when the leader already exited: whatever is left of its group is still stopped.
    Returns the leader's return code.
    """
    pgid = proc.pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    try:
        proc.wait(timeout=max(0.0, grace_s))
    except subprocess.TimeoutExpired:
        pass
    # the leader may be gone while members of its group linger: give them the rest of the grace
    deadline = time.monotonic() + max(0.0, grace_s)
    while group_alive(pgid) and time.monotonic() < deadline and proc.poll() is not None:
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    return proc.wait()


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
