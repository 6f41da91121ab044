"""Extra link of the operators and sensors: the job's page.

The Vertex AI console, or the emulator's own job page when the connection is the emulator's
(``"emulator": true``; an ``api_endpoint`` override without it is still Vertex AI, whose console the
link opens). The hook's ``console_url`` builds it. The operators push ``{"name", "console_url"}`` to
XCom under ``vertex_job`` as soon as the job is known; the link reads it back, so it works for a
running (deferred) task as well as a finished one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from airflow.sdk import BaseOperatorLink

from airflow_vertex_dist.jobs.outputs import LINK_XCOM_KEY

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

__all__ = [
    "LINK_XCOM_KEY",
    "OWNER_XCOM_KEY",
    "OwnedJob",
    "OwnerRecord",
    "VertexJobLink",
    "ownership_problem",
    "task_owned_job",
]

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


def task_owned_job(name: str, fields: Mapping[str, Any] | None) -> OwnedJob | None:
    """The job ``name`` with the task's own credentials: the connection id and impersonation chain of
    its rendered template fields (``fields``: ``_compat.rendered_task_fields``, which no REST API call
    can change), never those an XCom names. None when the fields do not name a connection."""
    from airflow_vertex_dist.hooks.connection import parse_impersonation_chain

    conn_id = (fields or {}).get("vertex_dist_conn_id")
    if not isinstance(conn_id, str) or not conn_id.strip() or set(conn_id) == {"*"}:
        return None
    chain = (fields or {}).get("impersonation_chain")
    if chain is not None and not isinstance(chain, str | list):
        return None
    return OwnedJob(name, conn_id.strip(), parse_impersonation_chain(chain))


def ownership_problem(
    job: Mapping[str, Any],
    dag_id: str,
    task_id: str,
    run_id: str,
    map_index: int = -1,
    *,
    watched: str | None = None,
) -> str | None:
    """Why ``job`` (as the JobService returned it) is not the job of the task instance, or None.

    A job is the task instance's when it carries the labels the provider writes on every job it creates
    (``managed-by`` and ``airflow-run``: a hash of dag id, task id, run id and map index), or when it is
    the job the task watches (a sensor: ``watched``, its rendered ``job_name``). An XCom naming a job
    is never enough: a REST API user who may edit one DAG's XComs could name another DAG's job."""
    from airflow_vertex_dist.hooks.labels import MANAGED_BY_LABEL, MANAGED_BY_VALUE, RUN_LABEL, run_hash
    from airflow_vertex_dist.jobs.dicts import job_labels

    name = str(job.get("name", ""))
    if watched and name and watched.strip() == name:
        return None
    labels = job_labels(job)
    expected = run_hash(dag_id, task_id, run_id, map_index)
    if labels.get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE and labels.get(RUN_LABEL) == expected:
        return None
    return (
        f"job {name} is not the job of task {dag_id}.{task_id} run {run_id} (map index {map_index}): "
        f"its {RUN_LABEL} label is {labels.get(RUN_LABEL)!r}, this task instance's is {expected!r} "
        "(the task's XCom names a job the task did not create)"
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
