"""A replica's output as its supervisor (supervise.py) handles it: lines, the plain log, the records.

Standard library only, and cheap to import: the supervisor, a process per replica, loads it from
beside its own file (supervise.py says how).

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
to their end (at most ``DRAIN_S`` seconds: ``drain``).
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import threading
import time
from collections.abc import Mapping

__all__ = ["DRAIN_S", "MAX_LINE_BYTES", "LineStream", "RecordLog", "drain", "read_ready"]

_READ_BYTES = 64 * 1024
DRAIN_S = 5.0
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


class LineStream:
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


def read_ready(streams: dict[int, LineStream], ready: list[int]) -> None:
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


def drain(streams: dict[int, LineStream]) -> None:
    """Read both pipes to their end (the tree is dead: nothing keeps them open), ``DRAIN_S`` at most."""
    deadline = time.monotonic() + DRAIN_S
    while streams:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            ready, _, _ = select.select(list(streams), [], [], remaining)
        except OSError:
            continue
        read_ready(streams, ready)
    for fd, stream in list(streams.items()):
        stream.close()
        os.close(fd)
    streams.clear()
