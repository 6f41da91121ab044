"""``airflow-vertex-dist``: render specs (``render``) and rehearse a DAG against a scenario (``rehearse``).
(The local emulator is a distribution of its own, ``vertex-emulator``; the demo runs from a checkout:
``make demo``.)"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stdout
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main"]


def _print_body(body: dict[str, Any], compact: bool) -> None:
    if compact:
        print(json.dumps(body, sort_keys=True, separators=(",", ":")))
    else:
        print(json.dumps(body, sort_keys=True, indent=2))


def _date(text: str) -> datetime:
    """An ISO 8601 date or date-time; without a time zone, UTC."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date such as 2026-01-01 (got {text!r})") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Whatever importing Airflow and the DAG file writes to stdout (log lines, prints) goes to stderr:
    stdout carries the body alone, for a pipe or a diff."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


class DagFileError(Exception):
    """The DAG file does not load: Airflow's import errors of it."""


def _dags_of_file(path: Path) -> dict[str, Any]:
    """Every DAG the file defines, by id, found as Airflow's DAG processor finds them (its ``DagBag``:
    the module's DAG globals, and the DAGs ``with DAG(...)`` and a called ``@dag`` function register);
    its folder on ``sys.path`` first (so it imports its neighbours). ``DagFileError`` with Airflow's
    import errors when it does not load."""
    from airflow_vertex_dist._compat import dags_in_file

    path = path.resolve()
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    dags, errors = dags_in_file(str(path))
    if errors:
        raise DagFileError("\n".join(errors.values()))
    return dags


def _pick_task(args: argparse.Namespace, dags: dict[str, Any]) -> tuple[Any, Any]:
    """The (DAG, task) of the file's ``dags`` that ``--dag`` and ``--task`` name; ``TaskChoiceError``
    lists the choices when they name none, or several."""
    from airflow_vertex_dist.operators.offline_render import TaskChoiceError, provider_tasks

    if not dags:
        raise TaskChoiceError("defines no DAG")
    if args.dag is not None:
        if args.dag not in dags:
            raise TaskChoiceError(f"no DAG {args.dag!r}; its DAGs: {', '.join(sorted(dags))}")
        dags = {args.dag: dags[args.dag]}
    found = [(dag, task) for dag in dags.values() for task in provider_tasks(dag)]
    several_dags = len({dag.dag_id for dag, _ in found}) > 1

    def choices(pairs: list[tuple[Any, Any]]) -> str:
        names = [f"{dag.dag_id}:{task.task_id}" if several_dags else task.task_id for dag, task in pairs]
        return ", ".join(sorted(names))

    if not found:
        raise TaskChoiceError("no task runs a training or tuning operator of this provider")
    if args.task is not None:
        named = [(dag, task) for dag, task in found if task.task_id == args.task]
        if not named:
            raise TaskChoiceError(
                f"no training or tuning task {args.task!r}; choose one of: {choices(found)}"
            )
        found = named
    if len(found) > 1:
        what = "--dag" if len({task.task_id for _, task in found}) == 1 else "--task"
        what += " (and --dag)" if several_dags and what == "--task" else ""
        raise TaskChoiceError(f"several tasks match; pick one with {what}: {choices(found)}")
    return found[0]


def _render_dag_file(args: argparse.Namespace) -> int:
    """``render path/to/dag_file.py``: the body a manual run at ``--logical-date`` would create."""
    from pydantic import ValidationError

    from airflow_vertex_dist.operators.offline_render import (
        TaskChoiceError,
        connection_location,
        logical_date_notes,
        manual_run_context,
        render_task_spec,
        rendered_location,
    )
    from airflow_vertex_dist.operators.spec_field import SpecError, spec_error

    path = Path(args.spec)
    if not path.is_file():
        print(f"cannot load {args.spec}: no such file", file=sys.stderr)
        return 2
    try:
        with _stdout_to_stderr():
            dags = _dags_of_file(path)
    except DagFileError as exc:  # the DAG file's own error, as Airflow reports it
        print(f"cannot import {args.spec}: {exc}", file=sys.stderr)
        return 2
    when = args.logical_date or datetime.now(timezone.utc)
    where = None
    try:
        with _stdout_to_stderr():
            dag, task = _pick_task(args, dags)
            notes = logical_date_notes(dag, task, map_index=args.map_index)  # of the fields as written
            context = manual_run_context(dag, task, when, args.data_interval)
            spec = render_task_spec(dag, task, context, map_index=args.map_index)
            location = args.location or rendered_location(task, context, dag)
            if location is None:  # the run's hook takes the connection's
                location, where = connection_location(task, context, dag)
    except TaskChoiceError as exc:
        print(f"{args.spec}: {exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        print(f"{args.spec}: {spec_error(exc)}", file=sys.stderr)
        return 2
    except SpecError as exc:
        print(f"{args.spec}: {exc}", file=sys.stderr)
        print(_CONTEXT_NOTE, file=sys.stderr)
        return 2
    _print_body(spec.to_api(location=location), args.compact)
    for note in notes:
        print(note, file=sys.stderr)
    if where is not None:
        print(f"location: {location}, {where}" if location else f"location: none: {where}", file=sys.stderr)
    return _print_prices(spec, location, getattr(task, "capacity", None))


_CONTEXT_NOTE = (
    "(render gives the templates what a manual run gives them: logical_date, ds, ds_nodash, ts, "
    "ts_nodash, data_interval_start/end, run_id, params, dag, task, dag_run, macros; it has no task "
    "instance, XCom, Variables or Connections)"
)


def _render(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from airflow_vertex_dist.operators.spec_field import SpecError, spec_error
    from airflow_vertex_dist.specs import load_spec

    if args.spec.endswith(".py"):
        return _render_dag_file(args)
    dag_only = [
        flag
        for flag in ("task", "dag", "logical_date", "data_interval", "map_index")
        if getattr(args, flag) is not None
    ]
    if dag_only:
        flags = ", ".join("--" + flag.replace("_", "-") for flag in dag_only)
        print(f"{flags}: only with a DAG file (path/to/dag_file.py)", file=sys.stderr)
        return 2
    if ":" in args.spec and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # module:attribute from the current directory, as python -m does
    try:
        spec = load_spec(args.spec, location=args.location)
    except ValidationError as exc:
        print(f"{args.spec}: {spec_error(exc)}", file=sys.stderr)
        return 2
    except SpecError as exc:
        print(f"{args.spec}: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, ImportError, AttributeError) as exc:
        print(f"cannot load {args.spec}: {exc}", file=sys.stderr)
        return 2
    _print_body(spec.to_api(), args.compact)
    return _print_prices(spec, args.location)


def _print_prices(spec: Any, location: str | None, capacity: Any = None) -> int:
    """On stderr (stdout holds the body alone): the job's price per hour from the machine catalog, or,
    for a task with a capacity ladder, every rung's (a rung over the ladder's price ceiling: exit 2)."""
    from airflow_vertex_dist.specs.capacity import LadderError, plan_ladder, spec_price_per_hour

    if capacity is None:
        price, basis = spec_price_per_hour(spec, location)
        shown = f"{price:.2f} USD/hour ({basis})" if price is not None else f"unknown ({basis})"
        print(f"price: {shown}, from the machine catalog", file=sys.stderr)
        return 0
    from airflow_vertex_dist.operators.ladder import prices_table

    try:
        plans = plan_ladder(spec, capacity, location=location, rendered=True)
    except LadderError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    table = prices_table(plans, location or "?")
    print(f"capacity ladder, USD/hour from the machine catalog:\n{table}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["emulator"]:
        print(
            "the emulator is its own distribution: install vertex-emulator and run 'vertex-emulator'",
            file=sys.stderr,
        )
        return 2
    args = build_parser().parse_args(argv)
    return int(args.func(args))


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: ``render`` and ``rehearse``."""
    parser = argparse.ArgumentParser(prog="airflow-vertex-dist", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser(
        "render",
        help="print the exact Vertex AI v1 request body of a spec, or of a DAG file's task",
        description=(
            "Print the exact Vertex AI v1 request body of a spec (a JSON/YAML file, or module:attribute "
            "imported from the current directory), or of the training or tuning task of a DAG file, its "
            "spec rendered as a manual run at --logical-date would render it."
        ),
    )
    render.add_argument(
        "spec",
        help="a DAG file (path/to/dag_file.py), a JSON/YAML spec file, or module:attribute naming a spec",
    )
    render.add_argument(
        "--location",
        default=None,
        help="job location, when the spec does not set one (with a DAG file: instead of the operator's)",
    )
    render.add_argument("--compact", action="store_true", help="one line, no indentation")
    render.add_argument("--task", default=None, help="DAG file: the task id, when it has several such tasks")
    render.add_argument("--dag", default=None, help="DAG file: the DAG id, when it defines several")
    render.add_argument(
        "--logical-date",
        type=_date,
        default=None,
        metavar="DATE",
        help="DAG file: the run's logical date, e.g. 2026-01-01 (UTC unless it says); default now",
    )
    render.add_argument(
        "--data-interval",
        type=_date,
        nargs=2,
        default=None,
        metavar=("START", "END"),
        help="DAG file: data_interval_start and _end (default: both the logical date)",
    )
    render.add_argument(
        "--map-index", type=int, default=None, help="DAG file: which spec of a task mapped over several"
    )
    render.set_defaults(func=_render)
    from airflow_vertex_dist.rehearse.command import add_parser as add_rehearse

    add_rehearse(sub)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
