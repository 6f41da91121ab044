"""A ladder's rung on a persistent resource (``Rung(persistent_resource=...)``): the resource made
ready before the rung's job is created.

``prepare_resource`` runs in the worker before the job's Create. An existing resource
(``ensure=False``) must be there: the job's pools are checked against the real resource's
(``fit_errors``); a missing one leaves the rung. An ensured resource is created when missing (labelled
``managed-by`` and with its idle timeout, ``jobs.resources``), reused when a resource of that id has the
declared shape, and refused, failing the task, when it has another. Then the rung waits for the
resource to be RUNNING. The rung's ``pending_limit`` covers that wait and the job's: the seconds spent
on the resource are taken off the limit the job is judged by (``LadderState.waited``, kept across a
deferral). A resource that is not RUNNING within the limit, in ERROR, or whose Create is refused for
capacity, leaves the rung as a stockout (or quota) does, for the next rung.

Nothing here deletes a resource: the ladder leaves an ensured resource for the runs after it, and the
sweep operator (``VertexSweepPersistentResourcesOperator``) deletes it once idle past its timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist._compat import AirflowFailException
from airflow_vertex_dist.operators.ladder_parts import pending_limit_s

if TYPE_CHECKING:
    from airflow_vertex_dist.hooks.persistent_resources import PersistentResourcesHook, Resource
    from airflow_vertex_dist.jobs.failures import Failure
    from airflow_vertex_dist.operators.wait_host import WaitHost
    from airflow_vertex_dist.specs.capacity import RungPlan
    from airflow_vertex_dist.specs.persistent import PersistentResourceUse

__all__ = ["NO_LIMIT_WAIT_S", "prepare_resource", "resource_gone", "resource_hook", "resource_labels"]

#: How long a rung with no ``pending_limit`` waits for its resource to be RUNNING: Vertex AI's own
#: longest wait of a job (``Scheduling.timeout``'s default, 7 days).
NO_LIMIT_WAIT_S = 7 * 86400.0
_SETTLED = frozenset({"RUNNING", "ERROR", "STOPPING"})


def resource_hook(host: WaitHost, region: str) -> PersistentResourcesHook:
    """A resource hook on the host's connection and credentials, in ``region``."""
    from airflow_vertex_dist.hooks.persistent_resources import PersistentResourcesHook

    return PersistentResourcesHook(
        host.vertex_dist_conn_id,
        project_id=host.project_id,
        location=region,
        retry_policy=host.hook.retry_policy,
        impersonation_chain=host.hook.impersonation_chain,
        connection=host.hook.connection,
    )


def resource_labels(use: PersistentResourceUse) -> dict[str, str]:
    """The labels the task writes on a resource it creates: ``managed-by`` and its idle timeout."""
    from airflow_vertex_dist.hooks.labels import MANAGED_BY_LABEL, MANAGED_BY_VALUE
    from airflow_vertex_dist.jobs.resources import idle_timeout_label

    labels = {MANAGED_BY_LABEL: MANAGED_BY_VALUE}
    if use.idle_timeout is not None:
        labels.update(idle_timeout_label(use.idle_timeout.total_seconds()))
    return labels


def _check(plan: RungPlan, use: PersistentResourceUse, resource: Resource, name: str) -> None:
    """Fail the task when the real resource is not one the rung may run on (every try would fail)."""
    from airflow_vertex_dist.specs.persistent import fit_errors, pool_shapes, shape_difference

    where = f"rung {plan.number} ({plan.name}): persistent resource {name}"
    real = pool_shapes(resource)
    if use.ensure:
        differs = shape_difference(use.resource.shapes, real)
        if differs is not None:
            raise AirflowFailException(
                f"{where} exists with another shape than the rung ensures: {differs}. Not reusing it: "
                "give the rung another resource_id, or delete that resource"
            )
        return
    job = getattr(plan.spec, "trial_job", plan.spec)
    errors = fit_errors(job, use.resource.resource_id, real)
    if errors:
        raise AirflowFailException(f"{where}: the job does not fit the real resource:\n" + "\n".join(errors))


def _ensure(host: WaitHost, hook: PersistentResourcesHook, plan: RungPlan) -> Resource | Failure:
    """Create the rung's resource (it is missing): the resource, or the capacity failure of its Create."""
    from airflow_vertex_dist.jobs.failures import Failure, classify_create_error

    use = plan.rung.persistent_resource
    assert use is not None
    rid = use.resource.resource_id
    host.log.info("Rung %d (%s): creating persistent resource %s", plan.number, plan.name, rid)
    try:
        resource, _created = hook.create_resource(rid, use.resource.to_api(resource_labels(use)))
    except Exception as exc:
        failure = classify_create_error(exc)
        if failure.capacity:
            return Failure(failure.kind, f"persistent resource {rid}: {failure.reason}")
        if failure.fail_fast:
            raise AirflowFailException(
                f"{failure.kind} on rung {plan.number} ({plan.name}), creating persistent resource {rid}: "
                f"{failure.reason}"
            ) from exc
        raise
    return resource


def prepare_resource(host: WaitHost, plan: RungPlan, region: str) -> tuple[Failure | None, float]:
    """Make the rung's resource ready (see the module doc): ``(a failure the rung is left for, or
    None; the seconds of service time it took)``."""
    from airflow_vertex_dist.jobs.failures import Failure
    from airflow_vertex_dist.jobs.resources import resource_state

    use = plan.rung.persistent_resource
    assert use is not None
    rid = use.resource.resource_id
    hook = resource_hook(host, region)
    name = hook.resource_name(rid)
    started = hook.service_time().now_ns()

    def waited() -> float:
        return max(0.0, (hook.service_time().now_ns() - started) / 1e9)

    try:
        resource: Resource | Failure | None = hook.get_resource(rid)
        if resource is None and not use.ensure:
            return Failure("stockout", f"persistent resource {name} does not exist (ensure=False)"), 0.0
        if resource is None:
            resource = _ensure(host, hook, plan)
        if isinstance(resource, Failure):
            return resource, waited()
        _check(plan, use, resource, name)
        if resource_state(resource) != "RUNNING":
            limit = pending_limit_s(plan)
            host.log.info(
                "Rung %d (%s): waiting for persistent resource %s (%s) to be RUNNING%s",
                plan.number,
                plan.name,
                name,
                resource_state(resource),
                f", at most {limit:g}s (pending_limit)" if limit is not None else "",
            )
            timeout = NO_LIMIT_WAIT_S if limit is None else limit
            resource = hook.wait_for_state(rid, _SETTLED, timeout_s=timeout, poll_s=host.poll_interval)
        if resource is None:
            return Failure(
                "stockout", f"persistent resource {name} was deleted while the rung waited"
            ), waited()
        state = resource_state(resource)
        if state != "RUNNING":
            error = (resource.get("error") or {}).get("message")
            why = f"persistent resource {name} is {state} after {waited():.0f}s" + (
                f": {error}" if error else ""
            )
            return Failure("stockout", why), waited()
        host.log.info("Rung %d (%s): persistent resource %s is RUNNING", plan.number, plan.name, name)
        return None, waited()
    finally:
        hook.close()


def resource_gone(host: WaitHost, plan: RungPlan, region: str, job: Mapping[str, Any]) -> str | None:
    """Why the persistent resource of the rung of a CANCELLED ``job`` is gone (deleted, or being
    deleted), or ``None``: Vertex AI cancels the jobs on a resource it deletes ("Delete a persistent
    resource"), a cancel the ladder leaves the rung for, where a user's cancel fails the task."""
    from airflow_vertex_dist.jobs.resources import resource_state

    use = plan.rung.persistent_resource
    if use is None or str(job.get("state")) != "JOB_STATE_CANCELLED":
        return None
    hook = resource_hook(host, region)
    try:
        name = hook.resource_name(use.resource.resource_id)
        resource = hook.get_resource(use.resource.resource_id)
    finally:
        hook.close()
    if resource is None:
        return f"persistent resource {name} was deleted"
    state = resource_state(resource)
    return f"persistent resource {name} is {state}" if state in ("STOPPING", "ERROR") else None
