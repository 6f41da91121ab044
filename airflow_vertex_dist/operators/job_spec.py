"""What a training or tuning task derives from its spec. When it is built (at DAG parse time): the
templated field and the spec validated when nothing is left to render (``spec_field``), or before
rendering where it can be (``spec_before_rendering``), ``capacity=`` as a ``CapacityLadder``
(``ladder_of``) applied to the spec (``rung_specs``), and the warning about a FLEX_START wait without
limit in a DAG on a schedule (``warn_unbounded_flex_wait``). When it runs: the pools table with the
price per hour (``priced_pools_table``) and the job's estimated cost (``spec_cost``)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from airflow_vertex_dist.operators.spec_field import check_keys, coerce_spec, has_jinja, spec_to_field

if TYPE_CHECKING:
    from airflow_vertex_dist.jobs.output_types import CostOutput
    from airflow_vertex_dist.specs.capacity import CapacityLadder

__all__ = [
    "check_capacity",
    "ladder_of",
    "priced_pools_table",
    "rung_specs",
    "spec_before_rendering",
    "spec_cost",
    "spec_field",
    "warn_unbounded_flex_wait",
]


def spec_field(spec: Any, model: type[BaseModel]) -> tuple[Any, BaseModel | None]:
    """``spec=`` as the templated field (JSON: the UI shows the spec and the rendered spec as JSON) and
    the validated spec, validated at DAG-parse time when nothing is left to render (``None``
    otherwise: validated after rendering; a dict's keys are checked now, its values once rendered)."""
    parsed: BaseModel | None = None
    field = spec_to_field(spec, model)  # a model is dumped once, for both uses
    if not has_jinja(field):
        parsed = coerce_spec(spec, model)
        if parsed is not spec:  # a dict or a document: the field holds the validated spec
            field = spec_to_field(parsed, model)
    elif isinstance(field, Mapping):  # its keys now, its values once rendered
        check_keys(field, model)
    return field, parsed


def rung_specs(spec: Any, capacity: CapacityLadder | None, location: str | None) -> list[Any]:
    """``[spec]``, or with a ladder every rung's spec: the ladder planned (every rung validated and
    priced); a ladder that does not apply is a ``ValueError``."""
    if capacity is None:
        return [spec]
    from airflow_vertex_dist.specs.capacity import LadderError, plan_ladder

    try:
        plans = plan_ladder(spec, capacity, location=location)
    except LadderError as exc:
        raise ValueError(str(exc)) from None
    return [plan.spec for plan in plans]


def check_capacity(task: Any, spec: Any, gpu_pool: str | None, *, explicit_slots: bool) -> None:
    """At parse time: plan the task's ladder (every rung validated and priced), warn about a FLEX_START
    wait without limit in a scheduled DAG, and size ``gpu_pool``'s slots (the task's ``pool`` and
    ``pool_slots``). ``spec`` is the validated spec, its Jinja (in the fields that may hold some) not
    rendered yet."""
    from airflow_vertex_dist.specs.capacity import gpu_count

    specs = rung_specs(spec, task.capacity, task.location)
    warn_unbounded_flex_wait(task, specs)
    if gpu_pool is not None:
        task.pool = gpu_pool
        if not explicit_slots:
            task.pool_slots = max(1, *(gpu_count(s) for s in specs))


def priced_pools_table(spec: Any, location: str) -> str:
    """The pools as a table and the price per hour (from the machine catalog), logged at submit."""
    from airflow_vertex_dist.specs import pools_table
    from airflow_vertex_dist.specs.capacity import spec_price_per_hour

    table: str = pools_table(spec, location=location)
    price, basis = spec_price_per_hour(spec, location)
    shown = f"{price:.2f} USD/hour ({basis})" if price is not None else f"unknown ({basis})"
    return f"{table}\nprice: {shown}, from the machine catalog"


def spec_cost(job: Mapping[str, Any], spec: Any, location: str) -> CostOutput:
    """The job's estimated cost (``job_cost``): the spec's price per hour times the job's hours."""
    from airflow_vertex_dist.jobs.outputs import job_cost
    from airflow_vertex_dist.specs.capacity import spec_price_per_hour

    price, basis = spec_price_per_hour(spec, location)
    return job_cost(job, price, basis)


def spec_before_rendering(spec: Any, model: type[BaseModel]) -> Any:
    """A spec that holds Jinja, validated as it is (the fields that may hold Jinja judged once rendered):
    its machines and counts are known when they hold none. ``None`` when it cannot be validated yet."""
    if isinstance(spec, model):
        return spec
    try:
        return coerce_spec(spec, model)
    except Exception:  # Jinja where a rule needs the rendered value: known once rendered
        return None


def ladder_of(value: Any) -> CapacityLadder:
    """``capacity=`` as a ``CapacityLadder``: one, a list of rungs (no region allow-list), or a dict."""
    from airflow_vertex_dist.specs.capacity import CapacityLadder

    if isinstance(value, CapacityLadder):
        return value
    if isinstance(value, Mapping):
        return CapacityLadder.model_validate(dict(value))
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return CapacityLadder(rungs=tuple(value))
    raise TypeError(f"capacity: expected a CapacityLadder or a list of Rung (got {type(value).__name__})")


def warn_unbounded_flex_wait(task: Any, specs: Iterable[Any]) -> None:
    """A FLEX_START job with ``max_wait_duration`` 0 waits for capacity for ever ("If set to 0, the job
    will wait indefinitely": v1 ``Scheduling``); in a DAG on a schedule, runs then pile up behind it."""
    try:
        timetable = task.dag.timetable
    except Exception:  # not in a DAG (yet)
        return
    if not getattr(timetable, "can_be_scheduled", False):
        return
    for spec in specs:
        job = getattr(spec, "trial_job", spec)
        scheduling = job.scheduling
        if (
            scheduling is not None
            and scheduling.strategy == "FLEX_START"
            and scheduling.max_wait_duration is not None
            and not scheduling.max_wait_duration
        ):
            warnings.warn(
                f"task {task.task_id}: scheduling.max_wait_duration is 0 with strategy FLEX_START, so the "
                "job waits for capacity without limit while the DAG runs on a schedule; give a limit (the "
                "service's default is 24 hours) or a rung pending_limit",
                UserWarning,
                stacklevel=3,
            )
            return
