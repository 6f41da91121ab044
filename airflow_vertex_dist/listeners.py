"""Cancel a task's job when a user marks the task failed or successful by hand.

A deferred task waits in the triggerer, and Airflow (>= 3.3) calls the trigger's ``on_kill`` -- which
cancels the job -- when a user ends the task. But the triggerer only starts a trigger on its next loop
after the task deferred: a task marked failed or successful in that window (a second or two, more on
a busy triggerer) loses its trigger before it ever ran, so nothing would cancel its job, and it would
run on, billed, with no task waiting for it.

This listener closes that window from the other side. Airflow's REST API (and so the UI) fires
``on_task_instance_failed`` / ``on_task_instance_success`` with ``previous_state=None`` for a state
set by hand, in the API server's process. For a task of ours that owns a job with
``cancel_on_kill=True`` -- it pushed ``{"name", "conn_id"}`` under :data:`OWNER_XCOM_KEY` -- the
listener cancels that job unless it already ended. A cancel of a job the trigger cancels too is
harmless: the second one finds the job ended (or is a no-op at the service).

The listeners a task's own end fires (``previous_state=RUNNING``, in the worker or the scheduler)
are ignored: there the operator (or the trigger) has already dealt with its job, and a retry that
should re-attach must find the job still running.

The cancel runs in the request, bounded by :data:`CANCEL_RETRY` (15 s at most): the user's click
returns once the cancel is sent. The plugin is registered through the provider info (``plugins``).
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.listeners import hookimpl
from airflow.plugins_manager import AirflowPlugin

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.links import OWNER_XCOM_KEY

__all__ = ["CANCEL_RETRY", "OWNER_XCOM_KEY", "ManualStateListener", "VertexDistPlugin", "owned_job"]

log = logging.getLogger(__name__)

#: Bounds the cancel made while the user's request waits.
CANCEL_RETRY = RetryPolicy(initial_s=0.2, maximum_s=2.0, deadline_s=15.0, rpc_timeout_s=10.0)


def owned_job(task_instance: Any) -> dict[str, str] | None:
    """The ``{"name", "conn_id"}`` record the task instance's try pushed, or ``None``."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    map_index = getattr(task_instance, "map_index", -1)
    with create_session() as session:
        row = session.scalars(
            XComModel.get_many(
                run_id=task_instance.run_id,
                key=OWNER_XCOM_KEY,
                dag_ids=task_instance.dag_id,
                task_ids=task_instance.task_id,
                map_indexes=-1 if map_index is None else map_index,
                limit=1,
            )
        ).first()
        value = XComModel.deserialize_value(row) if row is not None else None
    if isinstance(value, dict) and all(isinstance(value.get(k), str) for k in ("name", "conn_id")):
        return {"name": value["name"], "conn_id": value["conn_id"]}
    return None


def cancel_owned_job(task_instance: Any, action: str) -> str | None:
    """Cancel the job the task instance owns unless it ended; the job's name when a cancel was sent."""
    owned = owned_job(task_instance)
    if owned is None:
        return None
    from airflow_vertex_dist.hooks.job_dicts import TERMINAL_STATES, job_state, parse_job_name
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

    name = parse_job_name(owned["name"])
    with VertexJobsHook(
        owned["conn_id"], project_id=name.project, location=name.location, retry_policy=CANCEL_RETRY
    ) as hook:
        state = job_state(hook.get_job(owned["name"]))
        if state in TERMINAL_STATES:
            log.info("%s: job %s already ended (%s): not cancelling", action, owned["name"], state)
            return None
        log.warning("%s: cancelling job %s (%s)", action, owned["name"], state)
        hook.cancel_job(owned["name"])
    return owned["name"]


class ManualStateListener:
    """``on_task_instance_failed`` / ``_success`` for states set by hand (``previous_state=None``)."""

    @hookimpl
    def on_task_instance_failed(self, previous_state: Any, task_instance: Any, error: Any) -> None:
        if previous_state is None:
            self._cancel(task_instance, "task marked failed")

    @hookimpl
    def on_task_instance_success(self, previous_state: Any, task_instance: Any) -> None:
        if previous_state is None:
            self._cancel(task_instance, "task marked success")

    @staticmethod
    def _cancel(task_instance: Any, action: str) -> None:
        ti = f"{task_instance.dag_id}.{task_instance.task_id} run {task_instance.run_id}"
        try:
            cancel_owned_job(task_instance, f"{ti}: {action}")
        except Exception:  # a listener must never break the user's request
            log.exception("%s: %s, but cancelling its job failed", ti, action)


class VertexDistPlugin(AirflowPlugin):
    """Registers :class:`ManualStateListener` (the provider info names this class under ``plugins``)."""

    name = "airflow_vertex_dist"
    listeners = [ManualStateListener()]
