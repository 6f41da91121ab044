"""What a capacity ladder's walk (``LadderWalk``) needs of the operator that owns it: ``LadderHost``,
every attribute it reads and every method it calls, and nothing else. ``VertexJobOperator`` is one.

The walk reads the host's settings when it uses them, never copies them: a setting changed on the task
after it was built (a test, a subclass) is the one the walk goes by, as it was when the walk was a
mixin of the operator.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

if TYPE_CHECKING:
    from airflow.sdk import Context
    from airflow.triggers.base import BaseTrigger

    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
    from airflow_vertex_dist.jobs.dicts import IfExists
    from airflow_vertex_dist.jobs.kinds import JobKind
    from airflow_vertex_dist.jobs.types import Job

__all__ = ["LadderHost"]


class LadderHost(Protocol):
    """The operator as its ladder walk sees it: its settings (read only), its hooks, its log, its
    validated spec, and what the walk asks it to do (log streaming, outputs, deferral)."""

    @property
    def job_kind(self) -> JobKind: ...
    @property
    def hook(self) -> VertexJobsHook: ...
    @property
    def log(self) -> Any: ...
    @property
    def validated_spec(self) -> Any: ...
    @property
    def vertex_dist_conn_id(self) -> str: ...
    @property
    def project_id(self) -> str | None: ...
    @property
    def if_exists(self) -> IfExists: ...
    @property
    def cancel_on_kill(self) -> bool: ...
    @property
    def wait_for_completion(self) -> bool: ...
    @property
    def deferrable(self) -> bool: ...
    @property
    def poll_interval(self) -> float: ...
    @property
    def partial_success(self) -> str: ...
    @property
    def paused_grace(self) -> float: ...
    @property
    def execution_timeout(self) -> timedelta | None: ...

    def hook_in(self, location: str) -> VertexJobsHook:
        """A new hook on the host's connection and credentials, in ``location`` (a rung's region)."""

    def adopt_job(self, context: Context, job: Job) -> None:
        """Make ``job`` this try's (task state, link and owner record in XCom)."""

    def check_still_running(self, context: Context, job: Job) -> None:
        """Fail (cancelling ``job``) when the task instance is no longer running."""

    def keep_final_job(self, job: Mapping[str, Any]) -> None:
        """``job`` as it ended the try (OpenLineage's facets read it)."""

    def job_outputs(self, job: Mapping[str, Any]) -> Any:
        """The XCom return value of the try that ends with ``job``."""

    def failure_details(self, job: Mapping[str, Any]) -> str:
        """The failing replica's last log lines, for a failed job's error."""

    def log_streamer(self, job: Mapping[str, Any]) -> Any:
        """The worker-side replica log streamer of ``job``, or ``None``."""

    def log_selection(self, job: Mapping[str, Any] | None) -> Any:
        """Which replica log lines a trigger streams (``stream_logs``), or ``None``."""

    def defer(
        self,
        *,
        trigger: BaseTrigger,
        method_name: str,
        kwargs: dict[str, Any] | None = None,
        timeout: timedelta | None = None,
    ) -> NoReturn:
        """Airflow's ``BaseOperator.defer``."""
