"""How the shared log poller reads its pages without one job or one page stopping every stream.

* **Page size**: Cloud Logging's ``pageSize`` is a maximum, and a page of big lines can pass what the
  transport carries (gRPC's default receive limit is 4 MiB: 40 lines of 250 KiB made a 10 MB page,
  ``RESOURCE_EXHAUSTED: Received message larger than max``). Such a page is never retried as it was:
  ``PageSizer`` halves the page size and the same page is read again (``too_large`` tells the error),
  then grows the size back, a page at a time. A page that cannot be read even one entry at a time is
  skipped: the streams it covers get a marker line (``skipped_line``) saying which time span was
  left out and why, and go on after it.
* **Per-job budget**: every poll cycle each job may take at most ``JOB_BYTES_PER_CYCLE`` of the lines
  read (each line counted as its text plus ``LINE_OVERHEAD_BYTES``). A job past its budget leaves the
  rest of the cycle's reads while other jobs remain, which go on without its lines; it resumes from
  where it stopped at the next cycle. So one job's output cannot starve the other jobs' streams.
* **Pacing**: ``ReadBudget`` spaces the reads of every poller of an event loop evenly.
"""

from __future__ import annotations

import asyncio
import time

from airflow_vertex_dist.hooks.logs import LogLine

__all__ = [
    "JOB_BYTES_PER_CYCLE",
    "LINE_OVERHEAD_BYTES",
    "SKIPPED_KEY",
    "PageSizer",
    "ReadBudget",
    "line_cost",
    "skipped_line",
    "too_large",
]

#: What one job may take of one poll cycle's reads (bytes of text, with ``LINE_OVERHEAD_BYTES`` a line).
JOB_BYTES_PER_CYCLE = 2 * 1024 * 1024
#: What a line costs besides its text (an entry's metadata).
LINE_OVERHEAD_BYTES = 256
#: The replica field of a marker line (``skipped_line``).
SKIPPED_KEY = "vertex_dist"


def too_large(exc: BaseException) -> bool:
    """Whether ``exc`` says a response was larger than the transport carries (gRPC's
    ``RESOURCE_EXHAUSTED: Received message larger than max``): retrying the same page cannot help."""
    return "larger than max" in str(exc).lower()


def line_cost(line: LogLine) -> int:
    """What ``line`` counts against its job's budget."""
    return len(line.text.encode("utf-8", "replace")) + LINE_OVERHEAD_BYTES


class PageSizer:
    """A reader's page size: halved when a page is too large for the transport, doubled back (up to
    ``largest``) after each page read whole."""

    def __init__(self, largest: int) -> None:
        self.largest = largest
        self.size = largest

    def shrink(self) -> bool:
        """Halve the size; False when it is one entry already (the page must be skipped)."""
        if self.size <= 1:
            return False
        self.size = max(1, self.size // 2)
        return True

    def grow(self) -> None:
        self.size = min(self.largest, self.size * 2)


def skipped_line(job_id: str, after: str, until: str, exc: BaseException) -> LogLine:
    """The marker a stream gets for a span of its job's lines no page could carry: stamped ``until``
    (the end of the span), so the stream goes on after it."""
    reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return LogLine(
        job_id=job_id,
        replica=SKIPPED_KEY,
        trial_id=None,
        severity="WARNING",
        timestamp=until,
        insert_id="",
        text=(
            f"Replica log lines from {after or 'the start'} to {until} were skipped: Cloud Logging's page "
            f"of them could not be read even one entry at a time ({reason})"
        ),
    )


class ReadBudget:
    """At most ``per_minute`` reads a minute, evenly spaced (one process-wide instance by default)."""

    def __init__(self, per_minute: int) -> None:
        if per_minute <= 0:
            raise ValueError(f"log_reads_per_minute: must be a positive number (got {per_minute!r})")
        self.spacing = 60.0 / per_minute
        self._next = 0.0
        self._lock: asyncio.Lock | None = None

    async def acquire(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            now = time.monotonic()
            wait = self._next - now
            if wait > 0:
                await asyncio.sleep(wait)  # the budget's pacing itself, not a wait for state
            self._next = max(now, self._next) + self.spacing
