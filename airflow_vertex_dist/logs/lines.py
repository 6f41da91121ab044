"""How replica lines are written to the task log, by the worker's stream and the trigger's alike.

Each line is one log record at the logging level of its Cloud Logging severity (``python_level``),
masked by Airflow's secrets masker, and reads ``<time> [<replica key>] <text>``: ``time`` is the
entry's own timestamp in UTC, to the millisecond (``04:30:26.200Z``, ``short_time``), not the moment
the task read it -- a batch of lines read at once keeps the times its replicas wrote them at. The
lines of a batch are written in the order of those timestamps across replicas (``in_time_order``;
lines of equal times keep the order they were read in).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from airflow_vertex_dist._compat import redact
from airflow_vertex_dist.common.log_severity import python_level
from airflow_vertex_dist.common.rfc3339 import rfc3339_key
from airflow_vertex_dist.hooks.logs import LogLine

__all__ = ["in_time_order", "short_time", "write_lines"]


def short_time(timestamp: str) -> str:
    """``2026-12-06T04:30:26.200637Z`` as ``04:30:26.200Z`` (the text as it is when it is not such a time)."""
    date, sep, rest = timestamp.partition("T")
    clock = rest.rstrip("Z")
    whole, _, fraction = clock.partition(".")
    if not sep or not date or len(whole) != 8 or whole.count(":") != 2 or not rest.endswith("Z"):
        return timestamp
    digits = "".join(ch for ch in fraction if ch.isdigit())
    return f"{whole}.{digits[:3].ljust(3, '0')}Z"


def in_time_order(lines: Iterable[LogLine]) -> list[LogLine]:
    """``lines`` ordered by their timestamps across replicas; equal times keep their order."""
    return sorted(lines, key=lambda line: rfc3339_key(line.timestamp))


def write_lines(log: Any, lines: Iterable[LogLine]) -> list[LogLine]:
    """Write ``lines`` to ``log`` in time order (the module doc); returns them in the order written."""
    ordered = in_time_order(lines)
    for line in ordered:
        log.log(
            python_level(line.severity), "%s [%s] %s", short_time(line.timestamp), line.key, redact(line.text)
        )
    return ordered
