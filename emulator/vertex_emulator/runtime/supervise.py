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
   process's status (re-raising its signal when it died of one);
5. on ``SIGTERM``/``SIGINT``/``SIGHUP`` (the emulator stopping the replica, or dying): SIGTERMs every
   process of the tree, waits ``grace`` seconds, then SIGKILLs what is left;
6. on ``SIGUSR1`` (the emulator's crash injection): SIGKILLs the main process at once.

A command that cannot be executed ends the replica with status 127 and a line in its log.

The replica's stdout and stderr are two pipes the supervisor reads (select, 64 KiB at a time): the
two streams stay apart, as Vertex AI keeps them -- it logs stdout lines as INFO and stderr lines as
ERROR (public reports: GoogleCloudPlatform/vertex-ai-samples#242, tqdm progress and Hugging Face
lines on stderr shown ERROR, a printed dict INFO; ``gcloud ai custom-jobs stream-logs`` output in
public repositories shows pip's stderr warnings ERROR and its stdout INFO). Every complete line is
written twice: as it was printed to the replica's plain log (the supervisor's own stdout, the
``<key>.log`` file the emulator's pages and failure messages quote), and as one record of the
replica's structured log (``<records path>``, JSON lines ``{"t": ns, "s": "stdout"|"stderr",
"m": text}``) with the time it was read from the pipe, which the Logging API serves (``RecordLog``).
A line longer than ``MAX_LINE_BYTES`` (Cloud Logging's 256 KiB entry limit) keeps its first
``MAX_LINE_BYTES`` and loses the rest; output without a final newline becomes a line when its
stream closes. After the replica's main process ends and its tree is killed, both pipes are read
to their end (at most ``_DRAIN_S`` seconds).
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Mapping

__all__ = ["MAX_LINE_BYTES", "RecordLog", "descendants", "main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_POLL_S = 0.05
_READ_BYTES = 64 * 1024
_DRAIN_S = 5.0
#: Cloud Logging's limit on one entry ("LogEntry ... 256 KB", Cloud Logging quotas and limits page);
#: a longer line keeps its first MAX_LINE_BYTES bytes.
MAX_LINE_BYTES = 256 * 1024
_TAIL_BYTES = MAX_LINE_BYTES * 2


class RecordLog:
    """Appends records to a structured log: JSON lines ``{"t": ns, "s": stream, "m": text, ...}``.

    Each record's ``t`` is the wall clock in nanoseconds, taken *while holding an exclusive
    ``flock``* on the file and strictly increasing within the file. A reader that takes its time
    ``R`` first and then reads each file under a shared ``flock`` therefore sees every record with
    ``t <= R`` (a writer that took ``t <= R`` held the lock before the reader asked for it and wrote
    before releasing it): serving only ``t <= R`` never makes a record readable after a newer one.
    Used by the supervisor for replica lines and by the emulator for its ``service`` lines.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.last = 0
        self._lock = threading.Lock()
        with self._locked():
            self.last = self._last_time()

    def _last_time(self) -> int:
        """The newest record's ``t`` (a restarted replica appends after it); repairs a torn last line."""
        size = os.fstat(self.fd).st_size
        if not size:
            return 0
        with open(self.path, "rb") as fh:
            fh.seek(max(0, size - _TAIL_BYTES))
            tail = fh.read()
        if not tail.endswith(b"\n"):
            os.write(self.fd, b"\n")  # a writer killed mid-record: end its line, readers skip it
        for line in reversed(tail.split(b"\n")):
            if line.startswith(b'{"t":'):
                try:
                    return int(line[5 : line.index(b",")])
                except ValueError:
                    continue
        return 0

    def _locked(self) -> _Flock:
        return _Flock(self.fd)

    def append(
        self,
        stream: str,
        texts: list[str],
        *,
        at: int | None = None,
        fields: Mapping[str, object] | None = None,
    ) -> None:
        """Append one record per text (``fields`` go into each record), under one lock, stamped
        ``at`` (ns since the epoch: when the caller read them) or now, and after the file's last record."""
        if not texts:
            return
        with self._lock, self._locked():
            now = time.time_ns() if at is None else at
            out: list[str] = []
            for text in texts:
                self.last = stamp = max(now, self.last + 1)
                record = {"t": stamp, "s": stream, "m": text, **(fields or {})}
                out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            data = "".join(out).encode("utf-8", errors="replace")
            while data:
                data = data[os.write(self.fd, data) :]

    def close(self) -> None:
        os.close(self.fd)


class _Flock:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)


class _Stream:
    """Splits one pipe's bytes into lines: each to the plain log (fd 1) and to the records."""

    def __init__(self, name: str, fd: int, records: RecordLog | None) -> None:
        self.name = name
        self.fd = fd
        self.records = records
        self.buf = bytearray()
        self.dropping = False  # past MAX_LINE_BYTES of the current line

    def feed(self, data: bytes) -> None:
        lines: list[bytes] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                self._take(data[start:], lines, complete=False)
                break
            self._take(data[start:end], lines, complete=True)
            start = end + 1
        self._emit(lines)

    def _take(self, piece: bytes, lines: list[bytes], *, complete: bool) -> None:
        if self.dropping:
            self.dropping = not complete
            return
        room = MAX_LINE_BYTES - len(self.buf)
        if len(piece) > room:
            self.buf += piece[:room]
            lines.append(bytes(self.buf))
            self.buf.clear()
            self.dropping = not complete
            return
        self.buf += piece
        if complete:
            lines.append(bytes(self.buf))
            self.buf.clear()

    def close(self) -> None:
        """The stream ended: what is left without a newline is its last line."""
        if self.buf:
            self._emit([bytes(self.buf)])
            self.buf.clear()

    def _emit(self, lines: list[bytes]) -> None:
        if not lines:
            return
        read_at = time.time_ns()  # before the plain log has them: a reader of it never sees a later stamp
        data = b"".join(line + b"\n" for line in lines)
        try:
            while data:
                data = data[os.write(1, data) :]
        except OSError:
            pass  # the plain log is a convenience; the records are what the Logging API serves
        if self.records is not None:
            texts = [line.decode("utf-8", errors="replace").rstrip("\r") for line in lines]
            try:
                self.records.append(self.name, texts, at=read_at)
            except OSError:
                pass


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


def _read_ready(streams: dict[int, _Stream], ready: list[int]) -> None:
    """Read what the ready pipes hold; a pipe at its end closes its stream."""
    for fd in ready:
        stream = streams.get(fd)
        if stream is None:
            continue
        try:
            data = os.read(fd, _READ_BYTES)
        except OSError:
            data = b""
        if data:
            stream.feed(data)
        else:
            del streams[fd]
            stream.close()
            os.close(fd)


def _drain(streams: dict[int, _Stream]) -> None:
    """Read both pipes to their end (the tree is dead: nothing keeps them open), ``_DRAIN_S`` at most."""
    deadline = time.monotonic() + _DRAIN_S
    while streams:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            ready, _, _ = select.select(list(streams), [], [], remaining)
        except OSError:
            continue
        _read_ready(streams, ready)
    for fd, stream in list(streams.items()):
        stream.close()
        os.close(fd)
    streams.clear()


def main(args: list[str]) -> None:
    parent, grace, records_path, argv = int(args[0]), float(args[1]), args[2], args[3:]
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
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    child = os.fork()
    if child == 0:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        for fd in (wake_r, wake_w, out_r, out_w, err_r, err_w):
            os.close(fd)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"emulator: cannot start {argv[0]!r}: {exc}\n")
            sys.stderr.flush()
        os._exit(127)
    os.close(out_w)
    os.close(err_w)
    records = RecordLog(records_path) if records_path else None
    streams = {out_r: _Stream("stdout", out_r, records), err_r: _Stream("stderr", err_r, records)}
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
            ready, _, _ = select.select([wake_r, *streams], [], [], _POLL_S)
        except OSError:  # InterruptedError included
            continue
        if wake_r in ready:
            os.read(wake_r, 4096)
        _read_ready(streams, ready)
    _kill_tree(me)
    _drain(streams)
    if records is not None:
        records.close()
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
