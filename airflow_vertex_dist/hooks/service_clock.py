"""The service's clock as the provider reads it: its time now and its pace.

Vertex AI keeps time as this host does (both synchronised to UTC), so against it the provider counts
on its own clock: ``HOST_TIME``. The emulator, while it plays a scenario, runs its clock
``compression`` times faster than the machine's and ahead of it (docs/emulator.md, "Scenarios": a
night played in minutes writes the night's times), and says so at ``GET /emulator/clock``. The
provider's own waits on service time -- a rung's ``pending_limit`` (counted from the job's
``createTime``), the poll interval, a rung's ``retry_backoff`` -- read that answer on an emulator
connection with a web endpoint, so a rehearsed night passes for the provider at the pace it passes for
the service. A reading is kept for ``READ_EVERY_S`` real seconds per endpoint and extrapolated in
between; a failed read keeps the last reading, or the host's clock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airflow_vertex_dist.hooks.connection import VertexConnection

__all__ = [
    "HOST_TIME",
    "MIN_POLL_S",
    "READ_EVERY_S",
    "ServiceTime",
    "aread_service_time",
    "read_service_time",
]

log = logging.getLogger(__name__)

#: real seconds a reading of an emulator's clock is used before it is read again
READ_EVERY_S = 1.0
#: the shortest poll interval a compressed clock brings a wait down to (real seconds)
MIN_POLL_S = 0.25
_READ_TIMEOUT_S = 2.0
_MAX_ANSWER_BYTES = 4096
_lock = threading.Lock()
_readings: dict[str, ServiceTime] = {}


@dataclass(frozen=True)
class ServiceTime:
    """The service's time: ``now_ns()`` (wall time as the service writes it), ``compression`` (service
    seconds per real second), from a reading taken at ``read_at`` (this host's monotonic clock)."""

    compression: float = 1.0
    read_ns: int | None = None  # the service's time when read; None: this host's clock
    read_at: float = 0.0

    def now_ns(self) -> int:
        """The service's wall time now, nanoseconds since the epoch."""
        if self.read_ns is None:
            return time.time_ns()
        return self.read_ns + round((time.monotonic() - self.read_at) * self.compression * 1e9)

    def real_s(self, service_s: float) -> float:
        """Real seconds that ``service_s`` seconds of service time last at this pace."""
        return max(0.0, service_s) / self.compression

    def poll_s(self, interval_s: float) -> float:
        """A poll interval in real seconds: ``interval_s`` of service time, never below ``MIN_POLL_S``
        (nor above ``interval_s``) when the service runs faster than real time."""
        if self.compression <= 1:
            return interval_s
        return min(interval_s, max(MIN_POLL_S, interval_s / self.compression))


#: the host's clock: Vertex AI's, and an emulator's when no scenario paces it
HOST_TIME = ServiceTime()


def _clock_url(conn: VertexConnection) -> str | None:
    base = conn.web_url if conn.is_emulator else None
    return f"{base}/emulator/clock" if base else None


def _read(url: str, token: str | None) -> ServiceTime:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=_READ_TIMEOUT_S) as answer:  # noqa: S310 (http(s) only)
        body = json.loads(answer.read(_MAX_ANSWER_BYTES))
    compression, now_ns = body.get("compression"), body.get("now_ns")
    if not isinstance(now_ns, int) or not isinstance(compression, int | float) or not compression > 0:
        raise ValueError(f"not a clock: {str(body)[:200]}")
    return ServiceTime(compression=float(compression), read_ns=now_ns, read_at=time.monotonic())


def _kept(url: str) -> tuple[ServiceTime | None, bool]:
    """The last reading of ``url`` (None: none yet), and whether it is younger than ``READ_EVERY_S``."""
    with _lock:
        last = _readings.get(url)
    return last, last is not None and time.monotonic() - last.read_at < READ_EVERY_S


def read_service_time(conn: VertexConnection) -> ServiceTime:
    """The service's time for ``conn``: ``HOST_TIME`` unless it is an emulator with a web endpoint,
    whose ``GET /emulator/clock`` is read (at most once every ``READ_EVERY_S`` seconds)."""
    url = _clock_url(conn)
    if url is None:
        return HOST_TIME
    last, fresh = _kept(url)
    if last is not None and fresh:
        return last
    try:
        reading = _read(url, conn.emulator_auth_token())
    except (OSError, ValueError) as exc:  # an older emulator (404: an HTTPError, an OSError) or none
        log.debug("The emulator's clock at %s could not be read (%s): the last reading is used", url, exc)
        # the last reading goes on (or the host's clock), read again only after READ_EVERY_S
        reading = ServiceTime(
            compression=last.compression if last else 1.0,
            read_ns=last.now_ns() if last and last.read_ns is not None else None,
            read_at=time.monotonic(),
        )
    with _lock:
        _readings[url] = reading
    return reading


async def aread_service_time(conn: VertexConnection) -> ServiceTime:
    """``read_service_time`` without blocking the event loop (the read runs in a worker thread)."""
    url = _clock_url(conn)
    if url is None:
        return HOST_TIME
    last, fresh = _kept(url)
    if last is not None and fresh:
        return last
    return await asyncio.to_thread(read_service_time, conn)
