"""A task's spec rendered outside a run, as a manual run at a given logical date would render it: what
``airflow-vertex-dist render path/to/dag_file.py`` prints.

The templates see what such a run gives them (``manual_run_context``): ``logical_date``, ``ds``,
``ds_nodash``, ``ts``, ``ts_nodash``, ``ts_nodash_with_tz``, ``data_interval_start`` and
``data_interval_end`` (the logical date unless given), ``run_id`` (``manual__<logical date>``), the
DAG's and task's ``params`` at their defaults, ``dag``, ``task``, ``dag_run`` (its ``run_id``,
``logical_date``, ``run_after``, data interval and an empty ``conf``), ``task_instance_key_str`` and
``macros``, through the DAG's Jinja environment (its macros, filters and undefined rule). There is no
task instance, so nothing that needs one (``ti``, XCom), a Variable (``var``) or a Connection
(``conn``): a template using them fails naming its path in the spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from types import SimpleNamespace
from typing import Any

__all__ = [
    "TaskChoiceError",
    "connection_location",
    "logical_date_notes",
    "manual_run_context",
    "provider_tasks",
    "render_task_spec",
    "rendered_location",
]


class TaskChoiceError(ValueError):
    """The DAG file, DAG, task or map index asked for is not there; the message lists the choices."""


def _operator_class(task: Any) -> type[Any]:
    cls = getattr(task, "operator_class", None)  # a mapped task names the class it expands
    return cls if isinstance(cls, type) else type(task)


def provider_tasks(dag: Any) -> list[Any]:
    """The tasks of ``dag`` run by this provider's training or tuning operators (mapped ones too)."""
    from airflow_vertex_dist.operators.job import VertexJobOperator

    out = []
    for task in dag.tasks:
        cls = _operator_class(task)
        if issubclass(cls, VertexJobOperator):
            out.append(task)
    return out


def manual_run_context(
    dag: Any,
    task: Any,
    logical_date: datetime,
    data_interval: tuple[datetime, datetime] | None = None,
) -> dict[str, Any]:
    """The template context of ``task`` in a manual run of ``dag`` at ``logical_date`` (see the module)."""
    from airflow.sdk import macros

    start, end = data_interval if data_interval is not None else (logical_date, logical_date)
    ds = logical_date.strftime("%Y-%m-%d")
    ds_nodash = ds.replace("-", "")
    ts = logical_date.isoformat()
    run_id = f"manual__{ts}"
    params: Any = getattr(task, "params", None)
    dag_run = SimpleNamespace(
        dag_id=dag.dag_id,
        run_id=run_id,
        run_type="manual",
        logical_date=logical_date,
        run_after=logical_date,
        data_interval_start=start,
        data_interval_end=end,
        conf={},
    )
    return {
        "dag": dag,
        "task": task,
        "dag_run": dag_run,
        "run_id": run_id,
        "logical_date": logical_date,
        "ds": ds,
        "ds_nodash": ds_nodash,
        "ts": ts,
        "ts_nodash": logical_date.strftime("%Y%m%dT%H%M%S"),
        "ts_nodash_with_tz": ts.replace("-", "").replace(":", ""),
        "data_interval_start": start,
        "data_interval_end": end,
        "task_instance_key_str": f"{dag.dag_id}__{task.task_id}__{ds_nodash}",
        "params": dict(params.dump() if hasattr(params, "dump") else params or {}),
        "macros": macros,
    }


def _mapped_spec(task: Any, map_index: int | None) -> Any:
    """The spec value of mapped ``task`` at ``map_index``: a partial ``spec``, or one of the literal
    list it is expanded over."""
    partial = getattr(task, "partial_kwargs", None) or {}
    if "spec" in partial:
        return partial["spec"]
    expanded = getattr(getattr(task, "expand_input", None), "value", None)
    values = expanded.get("spec") if isinstance(expanded, dict) else None
    if not isinstance(values, Sequence) or isinstance(values, str):
        raise TaskChoiceError(
            f"task {task.task_id!r} is mapped over specs known only at run time (from XCom): render "
            "cannot know them"
        )
    if map_index is None and len(values) == 1:
        map_index = 0
    if map_index is None or not 0 <= map_index < len(values):
        got = "" if map_index is None else f" (got {map_index})"
        raise TaskChoiceError(
            f"task {task.task_id!r} is mapped over {len(values)} specs: pick one with --map-index "
            f"0..{len(values) - 1}{got}"
        )
    return values[map_index]


def render_task_spec(dag: Any, task: Any, context: dict[str, Any], *, map_index: int | None = None) -> Any:
    """The spec of ``task`` rendered with ``context`` and validated, as a run does before creating the
    job (``VertexJobOperator.rendered_spec``); a mapped task's spec at ``map_index``."""
    env = dag.get_template_env()
    cls = _operator_class(task)
    if cls is not type(task):  # mapped: build the one instance's operator, as the run would
        task = cls(task_id=task.task_id, spec=_mapped_spec(task, map_index))
        context = {**context, "task": task}
    elif map_index is not None:
        raise TaskChoiceError(f"task {task.task_id!r} is not mapped: drop --map-index")
    return task.rendered_spec(context, env)


def rendered_location(task: Any, context: dict[str, Any], dag: Any) -> str | None:
    """The operator's ``location`` argument, rendered (``None`` when it sets none)."""
    location = getattr(task, "location", None)
    if location is None:
        location = (getattr(task, "partial_kwargs", None) or {}).get("location")
    if not location:
        return None
    return str(task.render_template(location, context, dag.get_template_env()))


def _task_argument(task: Any, name: str) -> Any:
    """An operator argument of ``task``, also of a mapped one (its ``partial`` arguments)."""
    value = getattr(task, name, None)
    if value is None:
        value = (getattr(task, "partial_kwargs", None) or {}).get(name)
    return value


def connection_location(task: Any, context: dict[str, Any], dag: Any) -> tuple[str | None, str]:
    """The location of the task's connection (its ``vertex_dist_conn_id``, rendered), read as the hooks
    read it: the connection's extras, parsed, with no call to any Google API. ``(location, what to
    say about it)``; ``(None, why)`` when the connection does not exist here, cannot be parsed or sets
    no location."""
    from airflow_vertex_dist._compat import AirflowException
    from airflow_vertex_dist.hooks.connection import DEFAULT_CONN_ID
    from airflow_vertex_dist.hooks.hook_base import VertexHookBase

    conn_id = _task_argument(task, "vertex_dist_conn_id") or DEFAULT_CONN_ID
    conn_id = str(task.render_template(conn_id, context, dag.get_template_env()))
    try:
        location = VertexHookBase(conn_id).connection.location
    except AirflowException as exc:  # not found (AirflowNotFoundException), or its backend failed
        return None, (
            f"connection {conn_id!r} does not exist here ({exc}): outside a task, Airflow looks in "
            "AIRFLOW_CONN_* variables and a configured secrets backend; give --location"
        )
    except ValueError as exc:
        return None, f"connection {conn_id!r} cannot be read: {exc}"
    if not location:
        return None, f"connection {conn_id!r} sets no location; give --location"
    return location, f"the location of connection {conn_id!r}"


def _field_value(task: Any, field: str, map_index: int | None) -> Any:
    if field == "spec" and _operator_class(task) is not type(task):  # mapped: the one instance's spec
        try:
            return _mapped_spec(task, map_index)
        except TaskChoiceError:
            return None
    return _task_argument(task, field)


def logical_date_notes(dag: Any, task: Any, *, map_index: int | None = None) -> list[str]:
    """For a DAG with no schedule (its runs are manual, and a manual run may have no logical date):
    one note per template variable a rendered field of ``task`` uses that only a run with a logical
    date has (``ds``, ``ds_nodash``, ``ts``, ``logical_date``...), naming the field's path and the
    variable, with what to use instead (``spec_field.NO_LOGICAL_DATE_ADVICE``, what the run's error
    says). ``[]`` for a scheduled DAG."""
    from jinja2 import TemplateSyntaxError, meta

    from airflow_vertex_dist.operators.spec_field import (
        LOGICAL_DATE_KEYS,
        NO_LOGICAL_DATE_ADVICE,
        template_strings,
    )

    if getattr(dag.timetable, "can_be_scheduled", True):
        return []
    env = dag.get_template_env()
    notes = []
    for field in _operator_class(task).template_fields:
        for path, text in template_strings(_field_value(task, field, map_index), field):
            try:
                names = meta.find_undeclared_variables(env.parse(text))
            except TemplateSyntaxError:  # the render itself said so
                continue
            for name in sorted(names & LOGICAL_DATE_KEYS):
                notes.append(
                    f"note: {path} uses {name}: this DAG has no schedule, and a run triggered by hand "
                    f"without a logical date cannot render it; {NO_LOGICAL_DATE_ADVICE}"
                )
    return notes
