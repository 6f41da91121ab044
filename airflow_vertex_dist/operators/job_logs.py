"""A training or tuning task's replica logs in the worker: ``JobLogs``, an object the operator owns
(``VertexJobOperator.job_logs``, made on first use), with ``LogsHost`` what it needs of the operator.

Which lines a wait streams (``stream_logs``: ``selection``), the worker-side streamer of a job
(``streamer``, ``airflow_vertex_dist.logs.worker_stream``), and the failing replica's last lines that a
failed job's error quotes (``failure_details``), read with the task's own credentials (``logs_hook``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from airflow_vertex_dist.jobs.dicts import parse_job_name

if TYPE_CHECKING:
    from airflow_vertex_dist.hooks.logs import VertexLogsHook
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
    from airflow_vertex_dist.logs.worker_stream import LogStreamer, StreamLogs

__all__ = ["JobLogs", "LogsHost"]


class LogsHost(Protocol):
    """The operator as its ``JobLogs`` sees it: ``stream_logs``, its connection, hook and log."""

    @property
    def stream_logs(self) -> StreamLogs: ...
    @property
    def vertex_dist_conn_id(self) -> str: ...
    @property
    def hook(self) -> VertexJobsHook: ...
    @property
    def log(self) -> Any: ...


class JobLogs:
    """The replica logs of its host's job, read in the worker (see the module doc)."""

    def __init__(self, host: LogsHost) -> None:
        self.host = host

    def selection(self, job: Mapping[str, Any] | None) -> Any:
        """Which replica log lines a wait streams (``stream_logs``), or ``None``."""
        from airflow_vertex_dist.logs.worker_stream import selection_of

        return selection_of(self.host.stream_logs, job)

    def streamer(self, job: Mapping[str, Any]) -> LogStreamer | None:
        """The worker-side replica log streamer of ``job``, or ``None`` (``stream_logs=False``)."""
        from airflow_vertex_dist.logs.worker_stream import LogStreamer

        selection = self.selection(job)
        if selection is None:
            return None
        name = parse_job_name(str(job["name"]))
        return LogStreamer(self.logs_hook(name.project), name.job_id, selection, self.host.log)

    def logs_hook(self, project: str) -> VertexLogsHook:
        """A Cloud Logging hook on ``project`` with the task's own impersonation chain, else the
        connection's."""
        from airflow_vertex_dist.hooks.logs import VertexLogsHook

        return VertexLogsHook(
            self.host.vertex_dist_conn_id,
            project_id=project,
            impersonation_chain=self.host.hook.impersonation_chain_override or None,
        )

    def failure_details(self, job: Mapping[str, Any]) -> str:
        """The failing replica's last log lines, for a failed job's error."""
        from airflow_vertex_dist.logs.worker_stream import failure_details, shown_by

        hook = self.logs_hook(parse_job_name(str(job["name"])).project)
        try:
            shown = shown_by(self.selection(job))  # lines the stream wrote are not quoted again
            return failure_details(job, lambda job_id, replica, n: hook.tail(job_id, replica, lines=n), shown)
        finally:
            hook.close()
