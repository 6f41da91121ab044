"""The emulator's structured logs, read back: an index per file, records read from disk on demand.

Every replica's supervisor writes ``<state_dir>/logs/<job id>/<replica key>.jsonl`` and the job's
driver writes ``service.jsonl`` beside it: JSON lines ``{"t": ns, "s": stream, "m": text, ...}``
(``stream`` is ``stdout``, ``stderr`` or ``service``; a service record may add ``"sev"`` and
``"labels"``), written under an exclusive ``flock`` with strictly increasing times
(supervise.py, ``RecordLog``).

``RecordIndex`` keeps, per file, the time and byte offset of every complete record (16 bytes a
record, whatever its text) and the number of bytes indexed: a refresh reads only what was appended
since, under a shared ``flock``, so it never sees half a record; a record is parsed once to index it
and again only when a request reads it back (``read``). Memory grows with the number of lines,
never with their text, and nothing is read twice except what a request asks for.
"""

from __future__ import annotations

import bisect
import fcntl
import json
import os
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["RECORDS_SUFFIX", "SERVICE_KEY", "Record", "RecordIndex", "records_path"]

#: a structured log's file name is ``<key>.jsonl``
RECORDS_SUFFIX = ".jsonl"
#: the ``task_name`` of Vertex AI's own lines about a job ("Waiting for job to be provisioned."...)
SERVICE_KEY = "service"
_BLOCK = 1024 * 1024  # bytes read at a time while indexing
_CHUNK = 256  # records read back at a time


def records_path(log_dir: Path, key: str) -> Path:
    """The structured log of replica ``key`` (or of the job's ``service`` lines) in ``log_dir``."""
    return Path(log_dir) / f"{key}{RECORDS_SUFFIX}"


@dataclass(frozen=True)
class Record:
    """One line of a structured log."""

    index: int  # its position among the file's records, from 0
    t: int  # nanoseconds since the epoch (strictly increasing within the file)
    stream: str  # "stdout", "stderr" or "service"
    text: str
    severity: str | None  # a service line's severity name (None: by stream)
    labels: dict[str, str]  # a service line's extra entry labels


def _parse(line: bytes) -> dict[str, Any] | None:
    """A record's fields, or None for a line that is not a whole record (a torn write)."""
    if not line.startswith(b'{"t":'):
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("t"), int) or not isinstance(data.get("m"), str):
        return None
    return data


class RecordIndex:
    """The index of one structured log file (see the module doc)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.size = 0  # bytes indexed: every complete line before this offset
        self.times = array("q")
        self.offsets = array("q")
        self.skipped = 0  # lines that were not whole records

    def __len__(self) -> int:
        return len(self.times)

    def refresh(self) -> None:
        """Index the records appended since the last refresh (under a shared ``flock``)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                size = os.fstat(fd).st_size
                if size > self.size:
                    self._index(fd, size)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _index(self, fd: int, size: int) -> None:
        pos = self.size
        carry = b""
        while pos < size:
            chunk = os.pread(fd, min(_BLOCK, size - pos), pos)
            if not chunk:
                break
            data = carry + chunk
            base = pos - len(carry)
            start = 0
            while True:
                end = data.find(b"\n", start)
                if end < 0:
                    break
                self._add(data[start:end], base + start)
                start = end + 1
            carry = data[start:]
            pos += len(chunk)
        self.size = pos - len(carry)  # a line without its newline yet is indexed later

    def _add(self, line: bytes, offset: int) -> None:
        record = _parse(line)
        if record is None:
            if line:
                self.skipped += 1
            return
        last = self.times[-1] if self.times else 0
        self.times.append(max(int(record["t"]), last + 1))  # a clock stepping back keeps the order
        self.offsets.append(offset)

    def span(self, since: int | None, until: int | None) -> tuple[int, int]:
        """The index range ``[lo, hi)`` of the records with ``since <= t <= until`` (None: open)."""
        lo = 0 if since is None else bisect.bisect_left(self.times, since)
        hi = len(self.times) if until is None else bisect.bisect_right(self.times, until)
        return lo, max(lo, hi)

    def read(self, lo: int, hi: int, *, reverse: bool = False) -> Iterator[Record]:
        """Records ``lo`` to ``hi - 1`` from the file, oldest first (newest first with ``reverse``)."""
        if lo >= hi:
            return
        chunks = [(a, min(a + _CHUNK, hi)) for a in range(lo, hi, _CHUNK)]
        if reverse:
            chunks.reverse()
        with open(self.path, "rb") as fh:
            for first, stop in chunks:
                start = self.offsets[first]
                end = self.offsets[stop] if stop < len(self.offsets) else self.size
                fh.seek(start)
                records = list(self._records(fh.read(end - start), first, stop))
                yield from reversed(records) if reverse else records

    def _records(self, data: bytes, first: int, stop: int) -> Iterator[Record]:
        index = first
        for line in data.split(b"\n"):
            if index >= stop:
                return
            fields = _parse(line)
            if fields is None:
                continue
            labels = fields.get("labels")
            severity = fields.get("sev")
            yield Record(
                index=index,
                t=self.times[index],
                stream=str(fields.get("s", "stdout")),
                text=str(fields["m"]),
                severity=severity if isinstance(severity, str) else None,
                labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
            )
            index += 1
