"""What the waits of a task need of the operator that owns them: ``WaitHost``, every attribute they
read and every method they call, and nothing else. The waits are the capacity ladder's walk
(``LadderWalk``, ``airflow_vertex_dist.operators.ladder``) and the wait on one job without a ladder
(``JobWait``, ``airflow_vertex_dist.operators.job_wait``); ``VertexJobOperator`` is their host.

A wait reads the host's settings when it uses them, never copies them: a setting changed on the task
after it was built (a test, a subclass) is the one it goes by, as when the waits were the operator's
own methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

if TYPE_CHECKING:
    from airflow.triggers.base import BaseTrigger

    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
    from airflow_vertex_dist.jobs.dicts import IfExists
    from airflow_vertex_dist.jobs.kinds import JobKind

__all__ = ["WaitHost"]


class WaitHost(Protocol):
    """The operator as its waits see it: its settings (read only), its hooks, its log, its validated
    spec, and what a wait asks it to do (keep the final job, make the outputs, defer). A wait adopts
    and cancels jobs through the operator's ``JobAttacher`` and reads replica logs through its
    ``JobLogs``, which it is given too."""

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
    def location(self) -> str | None: ...
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

    def keep_final_job(self, job: Mapping[str, Any] | None) -> None:
        """``job`` as it ended the try (OpenLineage's facets read it)."""

    def job_outputs(self, job: Mapping[str, Any]) -> Any:
        """The XCom return value of the try that ends with ``job``."""

    def defer(
        self,
        *,
        trigger: BaseTrigger,
        method_name: str,
        kwargs: dict[str, Any] | None = None,
        timeout: timedelta | None = None,
    ) -> NoReturn:
        """Airflow's ``BaseOperator.defer``."""
