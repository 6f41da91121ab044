"""Replica log lines in the task log (the non-deferred wait), and a failed job's cause from its logs.

``stream_logs`` (an operator argument) chooses the lines: ``True`` -- the primary's
(``workerpool0-0``) lines and every replica's warnings and errors, what a user wants on a 40-replica
job --, ``"all"``, a list of replica keys and whole pools (``["workerpool0-0", "workerpool1-*"]``, matched
against the job's pools as ``VertexReplicaSensor`` matches them), or ``False``. Lines are written to
the task log as ``<time> [<replica key>] <text>`` with each entry's own time, in the replicas' time order,
each at the logging level of its Cloud Logging severity (``python_level``: ERROR lines are ERROR
records, INFO lines INFO; ``airflow_vertex_dist.logs.lines``).

When a job fails, ``failure_details`` names the failing replica (from the job's error message,
``The replica workerpool1-0 exited with a non-zero status of 1``) and quotes its last lines from
Cloud Logging, at most ``FAILURE_LINES`` lines of at most ``MAX_LINE_CHARS`` characters each,
passed through Airflow's secrets masker. Lines the stream already wrote to the task log are not
quoted again (``shown_by``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow_vertex_dist._compat import redact
from airflow_vertex_dist.jobs.dicts import parse_job_name

__all__ = [
    "FAILURE_LINES",
    "MAX_LINE_CHARS",
    "StreamLogs",
    "check_stream_logs",
    "failure_details",
    "failing_replica",
    "selection_of",
    "shown_by",
    "LogStreamer",
]

StreamLogs = bool | str | Sequence[str]

FAILURE_LINES = 20
MAX_LINE_CHARS = 1000
_REPLICA_RE = re.compile(r"[Rr]eplica (workerpool\d{1,2}-\d{1,6})\b")


def check_stream_logs(value: Any) -> StreamLogs:
    """``stream_logs`` as given, or a ``ValueError`` naming the field and the rule."""
    from airflow_vertex_dist.common.replicas import check_replica_names

    if isinstance(value, bool) or value == "all":
        return value  # type: ignore[no-any-return]
    if isinstance(value, (list, tuple)) and value and all(isinstance(k, str) for k in value):
        try:
            return check_replica_names(value, field="stream_logs")
        except ValueError as exc:
            raise ValueError(f"{exc} (or True, 'all' or False)") from None
    raise ValueError(
        "stream_logs: must be True (the primary's lines and every replica's warnings and errors), "
        "'all', a non-empty list of replica keys and pools like 'workerpool1-0' or 'workerpool1-*', "
        f"or False (got {value!r})"
    )


def selection_of(value: StreamLogs, job: Mapping[str, Any] | None = None) -> Any:
    """The logs hook's replica selection for a ``stream_logs`` value (None when off). Pools
    (``workerpool1-*``) are expanded to ``job``'s replicas, as ``VertexReplicaSensor`` expands them
    (``resolve_replicas``); a pattern matching none of them is a ``ValueError`` naming it."""
    if value is False:
        return None
    if value is True:
        return "default"
    if value == "all":
        return "all"
    keys = list(value)
    if any("*" in key for key in keys):
        from airflow_vertex_dist.jobs.replicas import resolve_replicas

        if job is None:
            raise ValueError("stream_logs: a pool pattern needs the job to expand it")
        keys = resolve_replicas(job, keys, field="stream_logs")
    return keys


def shown_by(selection: Any) -> Callable[[Any], bool]:
    """Whether a line was written to the task log by a stream with ``selection`` (``selection_of``):
    the streams' own rule (``selection_takes``), nothing when streaming is off."""
    from airflow_vertex_dist.logs.poller import selection_takes

    return lambda line: selection is not None and selection_takes(selection, line)


def failing_replica(job: Mapping[str, Any]) -> str | None:
    """The replica key a failed job's error message names, or None."""
    message = str((job.get("error") or {}).get("message") or "")
    match = _REPLICA_RE.search(message)
    return match.group(1) if match else None


def failure_details(
    job: Mapping[str, Any],
    read_tail: Callable[[str, str, int], list[Any]],
    shown: Callable[[Any], bool] | None = None,
) -> str:
    """Text to add to a failed job's error: its failing replica's last lines (masked), or "".

    ``shown`` (``shown_by``) tells the lines the task's stream wrote to the task log already: those
    are not quoted a second time."""
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
    if shown is not None:
        lines = [line for line in lines if not shown(line)]
        if not lines:
            return f"\nThe last lines of {replica} are the replica lines above in this log."
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
        from airflow_vertex_dist.logs.pages import PageSizer
        from airflow_vertex_dist.logs.poller import PAGE_SIZE, LogCursor, settle_seconds

        self.hook = hook
        self.settle = settle_seconds()
        self.job_id = job_id
        self.selection = selection
        self.log = log
        self.min_interval_s = min_interval_s
        self.cursor = LogCursor()
        self.pages = PageSizer(PAGE_SIZE)
        self._last_read = float("-inf")
        self.read_calls = 0

    def poll(self, *, force: bool = False) -> int:
        """Write the lines since the last call (one read per ``min_interval_s`` at most) that have
        settled (``[vertex_dist] log_settle_seconds`` old); returns how many. ``force`` (the wait
        has its verdict, the job ended): let the settle window pass, then read every line left."""
        from airflow_vertex_dist.hooks.logs import jobs_filter
        from airflow_vertex_dist.logs.lines import write_lines
        from airflow_vertex_dist.logs.pages import too_large
        from airflow_vertex_dist.logs.poller import LogCursor, settled_until

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
        fresh: list[Any] = []
        token = ""
        try:
            for _ in range(10):
                self.read_calls += 1
                try:
                    lines, token = self.hook.list_page(text, page_size=self.pages.size, page_token=token)
                except Exception as exc:
                    if too_large(exc) and self.pages.shrink():
                        continue  # the same page again, smaller (logs/pages.py)
                    raise
                self.pages.grow()
                for line in lines:
                    if self.cursor.before(line):
                        self.cursor = LogCursor.of(line)
                        fresh.append(line)
                if not token:
                    break
        except Exception as exc:  # streaming is best effort: the wait goes on
            self.log.warning("Reading replica logs failed (%s); retrying at the next poll", exc)
        write_lines(self.log, fresh)  # the lines read, in their replicas' time order (``logs.lines``)
        return len(fresh)
