"""The per-replica supervisor: the process the emulator starts for a replica, parent of its whole tree.

Run as ``python -I -S supervise.py <emulator pid> <grace seconds> <records path> <argv...>`` (standard
library only, no ``site``: nothing is imported from the environment the replica will see). It

1. makes itself a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): every process of the
   replica's tree that loses its parent -- a daemon that double-forks, a grandchild that calls
   ``setsid`` -- is re-parented to the supervisor instead of to init, so the supervisor can always
   find the whole tree by walking parent links from itself;
2. asks for ``SIGTERM`` when the emulator dies (``PR_SET_PDEATHSIG``), and exits if the emulator is
   already gone;
3. forks and ``exec``s the replica's argv (the child gets ``PR_SET_PDEATHSIG = SIGKILL``: it cannot
   outlive the supervisor either);
4. when the replica's main process ends, SIGKILLs whatever is left of the tree (a container ends with
   its main process: nothing survives it on Vertex AI either), reaps it, and exits with the main
   process's status (re-raising its signal when it died of one: a replica killed with SIGKILL, as
   an out-of-memory kill is, ends its supervisor with SIGKILL too, so the job reports 137);
5. on ``SIGTERM``/``SIGINT``/``SIGHUP`` (the emulator stopping the replica, or dying): SIGTERMs every
   process of the tree, waits ``grace`` seconds, then SIGKILLs what is left;
6. on ``SIGUSR1`` (the emulator's crash injection): SIGKILLs the main process at once.

A command that cannot be executed ends the replica with status 127 and a line in its log.

The replica's stdout and stderr are read from two pipes, each line written to the replica's plain log
and to its structured log (replica_output.py).

The supervisor is started by path (procs.spawn), where the package is not importable (``-I -S``)
and importing it would slow every replica's start: it imports replica_output.py from beside its own
file, under the package's names, without running the package's ``__init__`` modules
(``_bootstrap``).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
import types


def _bootstrap() -> None:
    """Run by path: make ``vertex_emulator.runtime`` name this file's folder, with no ``__init__`` run."""
    here = os.path.dirname(os.path.abspath(__file__))
    for name, path in (("vertex_emulator", os.path.dirname(here)), ("vertex_emulator.runtime", here)):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [path]
            sys.modules[name] = package


if __name__ == "__main__" and not __package__:
    _bootstrap()

from vertex_emulator.runtime.replica_output import (  # noqa: E402 -- after the bootstrap
    MAX_LINE_BYTES,
    LineStream,
    RecordLog,
    drain,
    read_ready,
)

__all__ = ["MAX_LINE_BYTES", "RecordLog", "descendants", "main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_POLL_S = 0.05
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1)
_UNCATCHABLE = (signal.SIGKILL, signal.SIGSTOP)


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return int(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Pids of every live process below ``root`` (read from ``/proc``; zombies included)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    out: list[int] = []
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap() -> list[tuple[int, int]]:
    """Reap every child that has ended: ``[(pid, wait status)]``."""
    out: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return out
        if pid == 0:
            return out
        out.append((pid, status))


def _no_children() -> bool:
    """True when no child is left, not even a zombie: then there is no descendant either (as a
    subreaper, every orphan below us became our child)."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _kill_tree(me: int) -> None:
    """SIGKILL every descendant until none is left (a forking process is caught on a later pass)."""
    for _ in range(1000):
        if _no_children():
            return
        pids = descendants(me)
        if not pids:
            return
        _signal_all(pids, signal.SIGKILL)
        _reap()
        time.sleep(0.005)


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file for the re-raised signal
        except (ImportError, ValueError, OSError):
            pass
        if sig not in _UNCATCHABLE:  # SIGKILL's and SIGSTOP's disposition cannot be set (EINVAL)
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.kill(os.getpid(), sig)
        time.sleep(1.0)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _catch_signals(wake_w: int) -> list[int]:
    """Queue the stop and crash signals for the loop (the list returned), which a child's end wakes too."""
    requests: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        requests.append(signum)

    for sig in _STOP_SIGNALS:
        signal.signal(sig, on_signal)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the loop when a child ends
    signal.set_wakeup_fd(wake_w)
    return requests


def _start_child(argv: list[str], out_w: int, err_w: int, inherited: tuple[int, ...]) -> int:
    """Fork and exec ``argv`` with its stdout and stderr on the pipes; the child's pid."""
    child = os.fork()
    if child != 0:
        return child
    for sig in (*_STOP_SIGNALS, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    for fd in inherited:
        os.close(fd)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write(f"emulator: cannot start {argv[0]!r}: {exc}\n")
        sys.stderr.flush()
    os._exit(127)


def _handle_requests(
    requests: list[int], child: int, me: int, grace: float, kill_at: float | None
) -> float | None:
    """Act on the signals received: SIGUSR1 kills the main process, any other stops the tree (SIGTERM
    now, SIGKILL at the time returned)."""
    while requests:
        if requests.pop(0) == signal.SIGUSR1:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        elif kill_at is None:
            _signal_all(descendants(me), signal.SIGTERM)
            kill_at = time.monotonic() + grace
    return kill_at


def _supervise(
    child: int, grace: float, requests: list[int], wake_r: int, streams: dict[int, LineStream]
) -> int:
    """Read the replica's output and act on the signals until its main process ends; its wait status."""
    me = os.getpid()
    kill_at: float | None = None
    while True:
        for pid, st in _reap():
            if pid == child:
                return st
        kill_at = _handle_requests(requests, child, me, grace, kill_at)
        if kill_at is not None and time.monotonic() >= kill_at:
            _signal_all(descendants(me), signal.SIGKILL)
        try:
            ready, _, _ = select.select([wake_r, *streams], [], [], _POLL_S)
        except OSError:  # InterruptedError included
            continue
        if wake_r in ready:
            os.read(wake_r, 4096)
        read_ready(streams, ready)


def main(args: list[str]) -> None:
    parent, grace, records_path, argv = int(args[0]), float(args[1]), args[2], args[3:]
    me = os.getpid()
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM) and os.getppid() != parent:
        os._exit(137)  # the emulator died before prctl: do not outlive it
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    requests = _catch_signals(wake_w)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    child = _start_child(argv, out_w, err_w, (wake_r, wake_w, out_r, out_w, err_r, err_w))
    os.close(out_w)
    os.close(err_w)
    records = RecordLog(records_path) if records_path else None
    streams = {out_r: LineStream("stdout", out_r, records), err_r: LineStream("stderr", err_r, records)}
    status = _supervise(child, grace, requests, wake_r, streams)
    _kill_tree(me)
    drain(streams)
    if records is not None:
        records.close()
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
