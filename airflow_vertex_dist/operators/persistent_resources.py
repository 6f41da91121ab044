"""Operators for DAGs that manage persistent resources: ensure (create, or reuse one of the same
shape), delete, and sweep the idle ones this provider created.

- ``VertexEnsurePersistentResourceOperator`` creates the resource a ``PersistentResource`` spec
  describes, labelled ``managed-by=airflow-vertex-dist`` and with its ``idle_timeout``
  (``jobs.resources``); a resource of that id with the same pools is reused as it is, one with other
  pools fails the task (``if_exists="fail"`` refuses any). It then waits until the resource is RUNNING:
  in the triggerer when ``deferrable`` (``PersistentResourceTrigger``), else in the worker.
- ``VertexDeletePersistentResourceOperator`` deletes one by id, never while a job runs on it (the task
  fails and names the job); a missing resource is nothing to do.
- ``VertexSweepPersistentResourcesOperator`` deletes every resource of the location that carries this
  provider's ``managed-by`` label and an idle timeout, once no job used it for that long (the last use
  read from the jobs that name it, ``jobs.resources.idleness``). Schedule it (hourly, say) in a DAG of
  its own: it is what deletes the resources that ladders and ensure operators create.

Nothing touches the network in ``__init__``; the spec is validated there.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from airflow_vertex_dist._compat import AirflowException, AirflowFailException, conf
from airflow_vertex_dist.operators.base import VertexBaseOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_vertex_dist.hooks.persistent_resources import PersistentResourcesHook, Resource
    from airflow_vertex_dist.specs.persistent import PersistentResource

__all__ = [
    "VertexDeletePersistentResourceOperator",
    "VertexEnsurePersistentResourceOperator",
    "VertexSweepPersistentResourcesOperator",
]


def _output(resource: Resource, created: bool | None = None) -> dict[str, Any]:
    from airflow_vertex_dist.jobs.resources import resource_id_of, resource_state

    out: dict[str, Any] = {
        "name": resource.get("name"),
        "resource_id": resource_id_of(resource),
        "state": resource_state(resource),
        "labels": dict(resource.get("labels") or {}),
    }
    if created is not None:
        out["created"] = created
    return out


class _ResourceOperator(VertexBaseOperator):
    """Owns a ``PersistentResourcesHook`` on the operator's connection, project and location."""

    def resource_hook(self) -> PersistentResourcesHook:
        from airflow_vertex_dist.hooks.persistent_resources import PersistentResourcesHook

        return PersistentResourcesHook(
            self.vertex_dist_conn_id,
            project_id=self.project_id,
            location=self.location,
            impersonation_chain=self.impersonation_chain,
        )


class VertexEnsurePersistentResourceOperator(_ResourceOperator):
    """Create a persistent resource, or reuse the one of its id when it has the same pools.

    :param resource: a ``PersistentResource`` or its dict.
    :param idle_timeout: written on a resource this task creates; the sweep operator deletes it once no
        job used it for that long. ``None``: the sweep leaves it alone.
    :param if_exists: ``"reuse"`` a resource of that id with the same pools, or ``"fail"``.
    :param wait_for_running: wait until the resource is RUNNING (ERROR or STOPPING fail the task).
    :param timeout: seconds to wait for that.
    :param deferrable: wait in the triggerer.
    :param poll_interval: seconds between reads of the resource.

    The XCom return value: ``name``, ``resource_id``, ``state``, ``labels``, ``created``.
    """

    ui_color = "#e6f4ea"

    def __init__(
        self,
        *,
        resource: PersistentResource | dict[str, Any],
        idle_timeout: timedelta | float | None = None,
        if_exists: Literal["reuse", "fail"] = "reuse",
        wait_for_running: bool = True,
        timeout: float = 3600.0,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float = 10.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        from airflow_vertex_dist.specs.persistent import PersistentResource, PersistentResourceUse

        if not isinstance(resource, PersistentResource):
            resource = PersistentResource.model_validate(resource)
        seconds = idle_timeout.total_seconds() if isinstance(idle_timeout, timedelta) else idle_timeout
        # the rung's rules of an idle timeout, one place
        self.use = PersistentResourceUse(resource=resource, ensure=True, idle_timeout=seconds)
        if if_exists not in ("reuse", "fail"):
            raise ValueError(f"if_exists: 'reuse' or 'fail' (got {if_exists!r})")
        if not timeout > 0:
            raise ValueError(f"timeout: must be a positive number of seconds (got {timeout!r})")
        if not poll_interval > 0:
            raise ValueError(f"poll_interval: must be a positive number of seconds (got {poll_interval!r})")
        self.if_exists = if_exists
        self.wait_for_running = wait_for_running
        self.timeout = float(timeout)
        self.deferrable = deferrable
        self.poll_interval = float(poll_interval)

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_vertex_dist.jobs.resources import resource_state
        from airflow_vertex_dist.operators.ladder_resource import resource_labels
        from airflow_vertex_dist.specs.persistent import pool_shapes, shape_difference

        spec = self.use.resource
        hook = self.resource_hook()
        try:
            found = hook.get_resource(spec.resource_id)
            created = found is None
            if found is None:
                self.log.info("Creating persistent resource %s", hook.resource_name(spec.resource_id))
                found, created = hook.create_resource(
                    spec.resource_id, spec.to_api(resource_labels(self.use))
                )
            name = str(found.get("name"))
            if not created:
                if self.if_exists == "fail":
                    raise AirflowFailException(f"persistent resource {name} exists (if_exists='fail')")
                differs = shape_difference(spec.shapes, pool_shapes(found))
                if differs is not None:
                    raise AirflowFailException(
                        f"persistent resource {name} exists with other pools: {differs}. Not reusing it: "
                        "choose another resource_id, or delete that resource"
                    )
                self.log.info("Reusing persistent resource %s (%s)", name, resource_state(found))
            if not self.wait_for_running or resource_state(found) == "RUNNING":
                return _output(found, created)
            if self.deferrable:
                self._defer(hook.location, created)
            found = hook.wait_for_state(
                spec.resource_id,
                frozenset({"RUNNING", "ERROR", "STOPPING"}),
                timeout_s=self.timeout,
                poll_s=self.poll_interval,
            )
        finally:
            hook.close()
        return self._judge(found, name, created)

    def _defer(self, location: str, created: bool) -> None:
        from airflow_vertex_dist.triggers.resource import PersistentResourceTrigger

        chain = self.impersonation_chain
        trigger = PersistentResourceTrigger(
            resource_id=self.use.resource.resource_id,
            conn_id=self.vertex_dist_conn_id,
            project_id=self.project_id,
            location=location,
            poll_interval=self.poll_interval,
            timeout=self.timeout,
            impersonation_chain=chain if isinstance(chain, str) else ",".join(chain or ()),
        )
        self.log.info("Deferring: waiting for persistent resource %s in the triggerer", trigger.resource_id)
        self.defer(trigger=trigger, method_name="execute_complete", kwargs={"created": created})

    def _judge(self, found: Resource | None, name: str, created: bool) -> dict[str, Any]:
        from airflow_vertex_dist.jobs.resources import resource_state

        if found is None:
            raise AirflowException(f"persistent resource {name} was deleted while the task waited for it")
        state = resource_state(found)
        if state != "RUNNING":
            error = (found.get("error") or {}).get("message")
            raise AirflowException(f"persistent resource {name} is {state}" + (f": {error}" if error else ""))
        self.log.info("Persistent resource %s is RUNNING", name)
        return _output(found, created)

    def execute_complete(
        self, context: Context, event: dict[str, Any] | None = None, created: bool = False
    ) -> dict[str, Any]:
        """Resume after the trigger fired: the resource, or the trigger's message as the failure."""
        event = event or {}
        if event.get("status") != "success" or not isinstance(event.get("resource"), dict):
            raise AirflowException(str(event.get("message") or "the resource's wait ended without an event"))
        self.log.info("%s", event.get("message"))
        return _output(event["resource"], created)


def _busy(hook: PersistentResourcesHook, resource: Resource, now_ns: int) -> tuple[str | None, float]:
    """``(why it is in use or None, seconds idle)`` of ``resource``, read from the jobs that name it."""
    from airflow_vertex_dist.jobs.resources import idleness, resource_id_of

    jobs = hook.jobs_on(resource_id_of(resource), since=resource.get("createTime"))
    found = idleness(resource, jobs, now_ns)
    return found.busy, found.idle_s


class VertexDeletePersistentResourceOperator(_ResourceOperator):
    """Delete a persistent resource by id, never one a job runs on.

    :param resource_id: the resource's id (the last part of its name). Templated.
    :param wait_for_deletion: wait until it is gone.
    :param timeout: seconds to wait for that.

    The XCom return value: ``{"name": ..., "deleted": bool}`` (``False``: there was none).
    """

    template_fields: Sequence[str] = ("resource_id", *VertexBaseOperator.template_fields)
    ui_color = "#fce8e6"

    def __init__(
        self, *, resource_id: str, wait_for_deletion: bool = True, timeout: float = 1800.0, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        if not resource_id:
            raise ValueError("resource_id: required")
        if not timeout > 0:
            raise ValueError(f"timeout: must be a positive number of seconds (got {timeout!r})")
        self.resource_id = resource_id
        self.wait_for_deletion = wait_for_deletion
        self.timeout = float(timeout)

    def execute(self, context: Context) -> dict[str, Any]:
        hook = self.resource_hook()
        rid = str(self.resource_id).strip()
        name = hook.resource_name(rid)
        try:
            found = hook.get_resource(rid)
            if found is None:
                self.log.info("Persistent resource %s does not exist: nothing to delete", name)
                return {"name": name, "deleted": False}
            busy, _idle = _busy(hook, found, hook.service_time().now_ns())
            if busy is not None:
                raise AirflowException(f"not deleting persistent resource {name}: {busy}")
            self.log.info("Deleting persistent resource %s", name)
            deleted = hook.delete_resource(rid)
            if deleted and self.wait_for_deletion:
                left = hook.wait_for_state(rid, frozenset(), timeout_s=self.timeout, poll_s=2.0)
                if left is not None:
                    raise AirflowException(
                        f"persistent resource {name} still there {self.timeout:g}s after Delete"
                    )
        finally:
            hook.close()
        return {"name": name, "deleted": deleted}


class VertexSweepPersistentResourcesOperator(_ResourceOperator):
    """Delete this provider's persistent resources of the location that are idle past their timeout.

    :param report_only: only log and return what would be deleted.

    The XCom return value: the names deleted (or, with ``report_only``, that would be).
    """

    ui_color = "#fce8e6"

    def __init__(self, *, report_only: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report_only = report_only

    def execute(self, context: Context) -> list[str]:
        from airflow_vertex_dist.hooks.labels import MANAGED_BY_LABEL, MANAGED_BY_VALUE
        from airflow_vertex_dist.jobs.resources import idle_timeout_of, resource_id_of

        hook = self.resource_hook()
        swept: list[str] = []
        try:
            now_ns = hook.service_time().now_ns()
            for resource in hook.list_resources():
                name, timeout = str(resource.get("name")), idle_timeout_of(resource)
                if (resource.get("labels") or {}).get(
                    MANAGED_BY_LABEL
                ) != MANAGED_BY_VALUE or timeout is None:
                    continue
                busy, idle_s = _busy(hook, resource, now_ns)
                if busy is not None or idle_s < timeout:
                    why = busy or f"idle {idle_s:.0f}s of its {timeout:g}s"
                    self.log.info("Keeping %s: %s", name, why)
                    continue
                self.log.warning(
                    "Deleting %s: idle %.0fs, past its idle timeout of %gs", name, idle_s, timeout
                )
                if not self.report_only:
                    hook.delete_resource(resource_id_of(resource))
                swept.append(name)
        finally:
            hook.close()
        return swept
