"""Replica processes: spawn in their own process group, stop a whole group, read a log's tail.

Every replica is started from an argv list (never through a shell) with ``start_new_session=True``,
so it leads its own process group and everything it forks can be stopped together: ``stop_group``
sends SIGTERM to the group, waits a grace period, then SIGKILLs what is left.

On Linux each replica also gets ``PR_SET_PDEATHSIG = SIGKILL``, so it dies if the emulator dies
without cleaning up (SIGKILL, OOM...). It is set by a tiny launcher -- ``python -I -S -c <launcher>
<emulator pid> <argv...>`` calls ``prctl`` through ctypes and then ``execvp``s the replica's argv,
keeping the pid -- rather than by a ``preexec_fn``: running Python code between fork and exec in a
process with gRPC threads crashes the child now and then (seen: SIGSEGV before exec), while without
a ``preexec_fn`` the child is started without running any Python code. The death signal survives
exec. It fires when the *thread* that started the child exits, which is why the runner starts,
restarts and stops a job's replicas from that job's own driver thread. It reaches the direct child
only: grandchildren a replica forks are stopped through the process group on every orderly path,
and after a crash of the emulator ``Runner.recover()`` stops the groups recorded in the state dir.
A command that cannot be executed ends the replica with status 127 and a line in its log.
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

__all__ = ["free_ports", "group_alive", "read_tail", "spawn", "stop_group"]

_LAUNCHER = """\
import os, sys
parent, argv = int(sys.argv[1]), sys.argv[2:]
if sys.platform.startswith("linux"):
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the emulator died before prctl: do not outlive it
        os._exit(137)
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    sys.stderr.write("emulator: cannot start %r: %s\\n" % (argv[0], exc))
    sys.stderr.flush()
    os._exit(127)
"""


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
    return subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(os.getpid()), *argv],
        env=dict(env),
        cwd=str(cwd),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
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
