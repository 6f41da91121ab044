"""``airflow-vertex-dist rehearse DAG_FILE --scenario FILE``: the command line of ``rehearse``."""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run"]


def _date(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a date: {text!r} (e.g. 2026-01-05 or 2026-01-05T02:00)"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"must be NAME=VALUE (got {text!r})")
    return name, value


def add_parser(sub: Any) -> None:
    """The ``rehearse`` subcommand."""
    cmd = sub.add_parser(
        "rehearse",
        help="run a DAG against a scenario the emulator plays on a compressed clock, and report",
        description=(
            "Start an emulator, run the DAG for each logical date (dag.test(), the tasks in this machine's "
            "processes) while the emulator plays the scenario (capacity, preemptions, outcomes, faults on "
            "its compressed clock), then report per run: the rungs tried and why, the jobs created, "
            "GPU-hours and dollars by rung, the time to a trained model and the most GPUs asked for and "
            "in use at once against the quota (report.json, report.txt, timeline.svg in --out)."
        ),
    )
    cmd.add_argument("dag_file", type=Path, help="the DAG file")
    cmd.add_argument("--scenario", type=Path, required=True, help="the scenario file (YAML or JSON)")
    cmd.add_argument("--dag-id", default=None, help="the DAG, when the file defines several")
    cmd.add_argument(
        "--logical-date",
        type=_date,
        action="append",
        default=[],
        metavar="DATE",
        help="a run's logical date (repeatable)",
    )
    cmd.add_argument("--start-date", type=_date, default=None, metavar="DATE", help="a backfill's first date")
    cmd.add_argument("--end-date", type=_date, default=None, metavar="DATE", help="a backfill's last date")
    cmd.add_argument(
        "--parallel", type=int, default=1, metavar="N", help="Airflow processes at once (default 1)"
    )
    cmd.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where the report and every log go (default: a new temporary directory)",
    )
    cmd.add_argument(
        "--emulator-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="a flag for the emulator, e.g. --emulator-arg=--image-map=IMAGE=COMMAND (repeatable)",
    )
    cmd.add_argument(
        "--env",
        type=_pair,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="environment of the Airflow processes (repeatable)",
    )
    cmd.add_argument(
        "--conn-id",
        default="vertex_dist_default",
        help="the connection the DAG's tasks use (default vertex_dist_default)",
    )
    cmd.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="the longest the runs may take, real seconds (default 3600)",
    )
    cmd.add_argument(
        "--bucket",
        action="append",
        default=[],
        metavar="NAME",
        help="a Cloud Storage bucket that exists on the emulator from the start (repeatable)",
    )
    cmd.add_argument(
        "--db-cache",
        type=Path,
        default=None,
        metavar="DIR",
        help=(
            "keep the migrated Airflow metadata DB in DIR (a file per Airflow version and settings) and "
            "copy it in later rehearsals instead of migrating again (default: migrate each time)"
        ),
    )
    cmd.set_defaults(func=run)


def _problem(args: argparse.Namespace) -> str | None:
    if not args.dag_file.is_file():
        return f"{args.dag_file}: no such DAG file"
    if not args.scenario.is_file():
        return f"--scenario {args.scenario}: no such file"
    if bool(args.start_date) != bool(args.end_date):
        return "--start-date and --end-date: give both, or neither"
    if not args.logical_date and not args.start_date:
        return "give --logical-date (repeatable) or --start-date and --end-date"
    if args.logical_date and args.start_date:
        return "--logical-date or --start-date/--end-date: not both"
    bad = [b for b in args.bucket if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{1,221}[a-z0-9]", b)]
    if bad:
        return f"--bucket {bad[0]}: not a bucket name (lowercase letters, digits, '-', '_' and '.', 3 to 222)"
    if not 1 <= args.parallel <= 64:
        return f"--parallel: must be from 1 to 64 (got {args.parallel})"
    return None


def run(args: argparse.Namespace) -> int:
    """Run the rehearsal; 0 when every run succeeded, 1 when one did not, 2 when it could not run."""
    from airflow_vertex_dist.rehearse.render import report_text
    from airflow_vertex_dist.rehearse.runs import RehearsalPlan, rehearse
    from airflow_vertex_dist.rehearse.service_process import RehearsalError

    problem = _problem(args)
    if problem:
        print(f"airflow-vertex-dist rehearse: {problem}", file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="vertex-dist-rehearsal-"))
    plan = RehearsalPlan(
        dag_file=args.dag_file.resolve(),
        scenario=args.scenario,
        workdir=out.resolve(),
        dag_id=args.dag_id,
        dates=args.logical_date,
        start=args.start_date,
        end=args.end_date,
        parallel=args.parallel,
        emulator_args=args.emulator_arg,
        env=dict(args.env),
        conn_id=args.conn_id,
        timeout_s=args.timeout,
        buckets=args.bucket,
        db_cache=args.db_cache,
    )
    try:
        done = rehearse(plan)
    except RehearsalError as exc:
        print(f"airflow-vertex-dist rehearse: {exc}", file=sys.stderr)
        return 2
    print(report_text(done.report))
    print(f"report.json, report.txt, timeline.svg and every log: {done.workdir}")
    if done.ok:
        return 0
    runs = done.report["runs"]
    failed = sum(r["state"] != "success" for r in runs)
    print(f"airflow-vertex-dist rehearse: {failed} of {len(runs)} runs did not succeed", file=sys.stderr)
    for line in done.failures:
        print(f"  {line}", file=sys.stderr)
    return 1
