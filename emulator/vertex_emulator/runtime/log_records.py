"""The emulator's structured logs, read back: an index per file, records read from disk on demand.

Every replica's supervisor writes ``<state_dir>/logs/<job id>/<replica key>.jsonl`` and the job's
driver writes ``service.jsonl`` beside it: JSON lines ``{"t": ns, "s": stream, "m": text, ...}``
(``stream`` is ``stdout``, ``stderr`` or ``service``; a service record may add ``"sev"`` and
``"labels"``), written under an exclusive ``flock`` with strictly increasing times
(supervise.py and replica_output.py, ``RecordLog``).

``RecordIndex`` keeps, per file, the time and byte offset of every complete record (16 bytes a
record, whatever its text) and the number of bytes indexed: a refresh reads only what was appended
since, under a shared ``flock``, so it never sees half a record; a record is parsed once to index it
and again only when a request reads it back (``read``). Memory grows with the number of lines,
never with their text, and nothing is read twice except what a request asks for.

A line that is not a whole record is skipped, never an error, and the records after it are served:
a torn write, a line longer than ``MAX_RECORD_BYTES`` (passed over as it is read, never held whole
in memory), JSON nested past the parser's recursion limit (a planted ``{"t":1,"m":"","x":[[[...``;
a replica *printing* ``[[[...`` is a record whose ``m`` is that text), a ``t`` that is not a
whole number from 0 to 2**62 or an ``m`` that is not text. Indexing is linear in the bytes appended
(each scanned once, whatever the lines' lengths), and reading back seeks to each record's offset,
so lines skipped between records are not read again.
"""

from __future__ import annotations

import bisect
import fcntl
import json
import os
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["MAX_RECORD_BYTES", "RECORDS_SUFFIX", "SERVICE_KEY", "Record", "RecordIndex", "records_path"]

#: a structured log's file name is ``<key>.jsonl``
RECORDS_SUFFIX = ".jsonl"
#: the ``task_name`` of Vertex AI's own lines about a job ("Waiting for job to be provisioned."...)
SERVICE_KEY = "service"
_BLOCK = 1024 * 1024  # bytes read at a time while indexing
_CHUNK = 256  # records read back at a time
#: the longest line read as a record: a supervisor writes at most 256 KiB of a line's text
#: (replica_output.MAX_LINE_BYTES), which JSON escapes to at most 6 bytes a byte (a control character is
#: ``\u001b``), beside a few short fields; a longer line cannot be a record.
MAX_RECORD_BYTES = 6 * 256 * 1024 + 64 * 1024
#: how every record's line starts (the writer puts ``t`` first)
_RECORD_START = b'{"t":'
#: a record's ``t`` is below this (the index keeps times as 64-bit integers)
_MAX_T = 2**62
#: the JSON escape of a UTF-16 surrogate (``\ud800``-``\udfff``), which may stand alone
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


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
    """A record's fields, or None for a line that is not a whole record (see the module doc)."""
    if not line.startswith(_RECORD_START) or len(line) > MAX_RECORD_BYTES:
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser recurses
        return None
    if not isinstance(data, dict) or not isinstance(data.get("m"), str):
        return None
    t = data.get("t")
    if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < _MAX_T:
        return None
    if _SURROGATE.search(line):
        # "\ud800" alone is JSON but no text UTF-8 can carry (a response holding it cannot be sent):
        # made "?", as the supervisor writes what it cannot encode
        replaced: dict[str, Any] = json.loads(json.dumps(data, ensure_ascii=False).encode(errors="replace"))
        return replaced
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
        """Index the complete lines in ``[self.size, size)``, each byte scanned once: a line split
        across blocks is kept (up to ``MAX_RECORD_BYTES``) until its newline, a longer one is dropped
        as it is read; a line that does not start as a record costs one test."""
        pos = line_start = self.size
        pending = bytearray()  # the current line's bytes from earlier blocks
        overlong = False  # the current line is longer than MAX_RECORD_BYTES: skipped
        while pos < size:
            chunk = os.pread(fd, min(_BLOCK, size - pos), pos)
            if not chunk:
                break
            lines = chunk.split(b"\n")
            tail = lines.pop()  # what follows the last newline: the start of a line not yet complete
            piece_start = pos  # where the next piece of the block starts in the file
            for number, piece in enumerate(lines):
                line = piece
                if number == 0 and (pending or overlong):  # the end of the line begun before
                    too_long = overlong or len(pending) + len(piece) > MAX_RECORD_BYTES
                    line = b"" if too_long else bytes(pending) + piece
                    self.skipped += int(too_long)
                    pending.clear()
                    overlong = False
                if line.startswith(_RECORD_START):
                    self._add(line, line_start)
                elif line:
                    self.skipped += 1
                piece_start += len(piece) + 1
                line_start = piece_start
            if not overlong:
                if len(pending) + len(tail) > MAX_RECORD_BYTES:
                    overlong = True
                    pending.clear()
                else:
                    pending += tail
            pos += len(chunk)
        self.size = line_start  # a line without its newline yet is indexed later

    def _add(self, line: bytes, offset: int) -> None:
        record = _parse(line)
        if record is None:
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
                records = list(self._records(fh, first, stop))
                yield from reversed(records) if reverse else records

    def _records(self, fh: BinaryIO, first: int, stop: int) -> Iterator[Record]:
        """Records ``first`` to ``stop - 1``, each read at its offset (what lies between is not read)."""
        for index in range(first, stop):
            fh.seek(self.offsets[index])
            fields = _parse(fh.readline(MAX_RECORD_BYTES + 1).rstrip(b"\n"))
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
