"""The per-replica supervisor: the process the emulator starts for a replica, parent of its whole tree.

Run as ``python -I -S supervise.py <emulator pid> <grace seconds> <argv...>`` (standard library
only, no ``site``: nothing is imported from the environment the replica will see). It

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
   process's status (re-raising its signal when it died of one);
5. on ``SIGTERM``/``SIGINT``/``SIGHUP`` (the emulator stopping the replica, or dying): SIGTERMs every
   process of the tree, waits ``grace`` seconds, then SIGKILLs what is left;
6. on ``SIGUSR1`` (the emulator's crash injection): SIGKILLs the main process at once.

A command that cannot be executed ends the replica with status 127 and a line in its log.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

__all__ = ["descendants", "main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_POLL_S = 0.05


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
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.kill(os.getpid(), sig)
        time.sleep(1.0)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def main(args: list[str]) -> None:
    parent, grace, argv = int(args[0]), float(args[1]), args[2:]
    me = os.getpid()
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM) and os.getppid() != parent:
        os._exit(137)  # the emulator died before prctl: do not outlive it
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    requests: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        requests.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
        signal.signal(sig, on_signal)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the loop when a child ends
    signal.set_wakeup_fd(wake_w)
    child = os.fork()
    if child == 0:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.close(wake_r)
        os.close(wake_w)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"emulator: cannot start {argv[0]!r}: {exc}\n")
            sys.stderr.flush()
        os._exit(127)
    status: int | None = None
    kill_at: float | None = None
    while status is None:
        for pid, st in _reap():
            if pid == child:
                status = st
        if status is not None:
            break
        while requests:
            if requests.pop(0) == signal.SIGUSR1:
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            elif kill_at is None:
                _signal_all(descendants(me), signal.SIGTERM)
                kill_at = time.monotonic() + grace
        if kill_at is not None and time.monotonic() >= kill_at:
            _signal_all(descendants(me), signal.SIGKILL)
        try:
            ready, _, _ = select.select([wake_r], [], [], _POLL_S)
            if ready:
                os.read(wake_r, 4096)
        except OSError:  # InterruptedError included
            pass
    _kill_tree(me)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
