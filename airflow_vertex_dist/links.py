"""Extra link of the operators and sensors: the job's page.

The Vertex AI console, or the emulator's own job page when the connection is the emulator's
(``"emulator": true``; an ``api_endpoint`` override without it is still Vertex AI, whose console the
link opens). The hook's ``console_url`` builds it. The operators push ``{"name", "console_url"}`` to
XCom under ``vertex_job`` as soon as the job is known; the link reads it back, so it works for a
running (deferred) task as well as a finished one.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypedDict

from airflow.sdk import BaseOperatorLink

from airflow_vertex_dist.jobs.outputs import LINK_XCOM_KEY

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

__all__ = ["LINK_XCOM_KEY", "OWNER_XCOM_KEY", "OwnedJob", "OwnerRecord", "VertexJobLink"]

#: The XCom key of an ``OwnedJob`` record (``{"name", "conn_id", "impersonation_chain"}``): pushed
#: by an operator that owns its job and cancels it when killed (``cancel_on_kill``);
#: ``airflow_vertex_dist.listeners`` cancels that job when a user marks the task failed or
#: successful by hand.
OWNER_XCOM_KEY = "vertex_job_owner"


class OwnerRecord(TypedDict):
    """The value under ``vertex_job_owner``: the job a task owns, its connection id and its own
    impersonation chain (empty: the connection's applies)."""

    name: str
    conn_id: str
    impersonation_chain: list[str]


@dataclasses.dataclass(frozen=True)
class OwnedJob:
    """A job a task owns, and the task's credentials for it: its connection id and its own
    impersonation chain (empty: the connection's applies). Whoever cancels the job for the task (the
    listener) does it with the same credentials as the task."""

    name: str
    conn_id: str
    impersonation_chain: tuple[str, ...] = ()

    def record(self) -> OwnerRecord:
        """The JSON value pushed under ``OWNER_XCOM_KEY``."""
        chain = list(self.impersonation_chain)
        return {"name": self.name, "conn_id": self.conn_id, "impersonation_chain": chain}

    @classmethod
    def from_record(cls, value: Any) -> OwnedJob | None:
        """The owned job of a record, ``None`` for anything that is not one (a record of an older
        version, without ``impersonation_chain``, is one: the connection's chain applies)."""
        if not isinstance(value, dict) or not all(isinstance(value.get(k), str) for k in ("name", "conn_id")):
            return None
        chain = value.get("impersonation_chain") or []
        if not (isinstance(chain, list) and all(isinstance(part, str) for part in chain)):
            return None
        return cls(value["name"], value["conn_id"], tuple(chain))

    def hook(self, **kwargs: Any) -> VertexJobsHook:
        """A hook for the job's project and location with the task's credentials (``kwargs``: the
        hook's other settings, e.g. ``retry_policy``)."""
        from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
        from airflow_vertex_dist.jobs.dicts import parse_job_name

        where = parse_job_name(self.name)
        return VertexJobsHook(
            self.conn_id,
            project_id=where.project,
            location=where.location,
            impersonation_chain=list(self.impersonation_chain) or None,
            **kwargs,
        )


class VertexJobLink(BaseOperatorLink):
    """The "Vertex AI console" button: the job in the Vertex AI console (or the emulator's job page);
    named apart from the job view's "Vertex AI job" tab (docs/ui.md), which shows the job in Airflow."""

    name = "Vertex AI console"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        # The Task SDK's XCom (the configured backend), a public utility at this path per Airflow's
        # "Public Interface" page; the task runner calls get_link in the worker, which has the channel.
        from airflow.sdk.execution_time.xcom import XCom

        if getattr(operator, "job_known", True) is False:
            # This try never got to a job (a spec error, say): there is no link to read, and asking
            # for it would log a misleading "XCom not found" after the real error.
            return ""
        value: Any = XCom.get_value(ti_key=ti_key, key=LINK_XCOM_KEY)
        if isinstance(value, dict) and isinstance(value.get("console_url"), str):
            return str(value["console_url"])
        return ""
