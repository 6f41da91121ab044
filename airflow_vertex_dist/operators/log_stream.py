"""Replica log lines in the task log (the non-deferred wait), and a failed job's cause from its logs.

``stream_logs`` (an operator argument) chooses the lines: ``True`` -- the primary's
(``workerpool0-0``) lines and every replica's warnings and errors, what a user wants on a 40-replica
job --, ``"all"``, a list of replica keys, or ``False``. Lines are written to the task log as
``[<replica key>] <text>``, in order per replica.

When a job fails, ``failure_details`` names the failing replica (from the job's error message,
``The replica workerpool1-0 exited with a non-zero status of 1``) and quotes its last lines from
Cloud Logging, at most ``FAILURE_LINES`` lines of at most ``MAX_LINE_CHARS`` characters each,
passed through Airflow's secrets masker.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow_vertex_dist._compat import redact
from airflow_vertex_dist.hooks.job_dicts import parse_job_name

__all__ = [
    "FAILURE_LINES",
    "MAX_LINE_CHARS",
    "StreamLogs",
    "check_stream_logs",
    "failure_details",
    "failing_replica",
    "selection_of",
    "LogStreamer",
]

StreamLogs = bool | str | Sequence[str]

FAILURE_LINES = 20
MAX_LINE_CHARS = 1000
_REPLICA_RE = re.compile(r"[Rr]eplica (workerpool\d{1,2}-\d{1,6})\b")
_KEY_RE = re.compile(r"workerpool\d{1,2}-\d{1,6}")


def check_stream_logs(value: Any) -> StreamLogs:
    """``stream_logs`` as given, or a ``ValueError`` naming the field and the rule."""
    if isinstance(value, bool) or value == "all":
        return value  # type: ignore[no-any-return]
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(k, str) and _KEY_RE.fullmatch(k) for k in value)
    ):
        return list(value)
    raise ValueError(
        "stream_logs: must be True (the primary's lines and every replica's warnings and errors), "
        f"'all', a non-empty list of replica keys like 'workerpool1-0', or False (got {value!r})"
    )


def selection_of(value: StreamLogs) -> Any:
    """The logs hook's replica selection for a ``stream_logs`` value (None when off)."""
    if value is False:
        return None
    if value is True:
        return "default"
    if value == "all":
        return "all"
    return list(value)




def failing_replica(job: Mapping[str, Any]) -> str | None:
    """The replica key a failed job's error message names, or None."""
    message = str((job.get("error") or {}).get("message") or "")
    match = _REPLICA_RE.search(message)
    return match.group(1) if match else None


def failure_details(job: Mapping[str, Any], read_tail: Callable[[str, str, int], list[Any]]) -> str:
    """Text to add to a failed job's error: its failing replica's last lines (masked), or ""."""
    replica = failing_replica(job)
    if replica is None:
        return ""
    job_id = parse_job_name(str(job["name"])).job_id
    try:
        lines = read_tail(job_id, replica, FAILURE_LINES)
    except Exception as exc:  # the diagnosis must never hide the failure itself
        return f"\n(the last lines of {replica} could not be read from Cloud Logging: {exc})"
    if not lines:
        return f"\n{replica} wrote nothing to Cloud Logging."
    body = "\n".join(redact(str(line.text)[:MAX_LINE_CHARS]) for line in lines[-FAILURE_LINES:])
    return f"\nLast lines of {replica} (Cloud Logging):\n{body}"


class LogStreamer:
    """Reads a job's new replica lines through a logs hook and writes them to ``log`` (sync waits)."""

    def __init__(
        self,
        hook: Any,
        job_id: str,
        selection: Any,
        log: logging.Logger | Any,
        *,
        min_interval_s: float = 1.2,
    ) -> None:
        from airflow_vertex_dist.triggers.log_poller import LogCursor, settle_seconds

        self.hook = hook
        self.settle = settle_seconds()
        self.job_id = job_id
        self.selection = selection
        self.log = log
        self.min_interval_s = min_interval_s
        self.cursor = LogCursor()
        self._last_read = float("-inf")
        self.read_calls = 0

    def poll(self, *, force: bool = False) -> int:
        """Write the lines since the last call (one read per ``min_interval_s`` at most) that have
        settled (``[vertex_dist] log_settle_seconds`` old); returns how many. ``force`` (the wait
        has its verdict, the job ended): let the settle window pass, then read every line left."""
        from airflow_vertex_dist.hooks.logs import jobs_filter
        from airflow_vertex_dist.triggers.log_poller import LogCursor, settled_until

        now = time.monotonic()
        if not force and now - self._last_read < self.min_interval_s:
            return 0
        if force:
            time.sleep(self.settle)  # the settle window: late lines of the ended job become readable
            until = None
        else:
            until = settled_until(self.settle)
        self._last_read = time.monotonic()
        text = jobs_filter(
            [self.job_id], since=self.cursor.timestamp or None, selection=self.selection, until=until
        )
        written = 0
        token = ""
        try:
            for _ in range(10):
                self.read_calls += 1
                lines, token = self.hook.list_page(text, page_token=token)
                for line in lines:
                    if self.cursor.before(line):
                        self.cursor = LogCursor.of(line)
                        self.log.info("[%s] %s", line.key, line.text)
                        written += 1
                if not token:
                    break
        except Exception as exc:  # streaming is best effort: the wait goes on
            self.log.warning("Reading replica logs failed (%s); retrying at the next poll", exc)
        return written
