"""``python -m vertex_emulator.scenario``: the scenario file's JSON schema (docs/scenario.schema.json);
``python -m vertex_emulator.scenario from-history PAGE.json ... --compression N``: a job history as a
scenario (scenario/history.py); ``python -m vertex_emulator.scenario check FILE``: the file checked
(errors name its lines), printed as the JSON ``PUT /emulator/scenario`` takes."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from vertex_emulator.scenario.history import DEFAULT_LOG_LINES, history_scenario, read_history, read_logs
from vertex_emulator.scenario.loader import (
    ScenarioError,
    read_scenario_text,
    scenario_document,
    scenario_schema_text,
)

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m vertex_emulator.scenario",
        description="Without a command: print the scenario file's JSON schema.",
    )
    commands = parser.add_subparsers(dest="command")
    history = commands.add_parser(
        "from-history",
        help="write a scenario that replays a Vertex AI job history",
        description=(
            "Write a scenario (YAML) that plays each ended CustomJob of a Vertex AI history as it went: "
            "its queue (createTime -> startTime) and run (startTime -> endTime), its end state, its "
            "error (code, message) and its first log lines. A HyperparameterTuningJob is listed, not "
            "played. Each job's creation offset is written beside its event."
        ),
    )
    history.add_argument(
        "pages",
        nargs="+",
        type=Path,
        metavar="LIST.json",
        help='a customJobs or hyperparameterTuningJobs List answer ({"customJobs": [...], ...}), one a page',
    )
    history.add_argument(
        "--logs",
        action="append",
        type=Path,
        default=[],
        metavar="ENTRIES.json",
        help="a Cloud Logging entries.list answer of those jobs (repeatable)",
    )
    history.add_argument(
        "--compression", type=float, required=True, help="scenario seconds per real second (1 to 10000)"
    )
    history.add_argument(
        "--max-log-lines",
        type=int,
        default=DEFAULT_LOG_LINES,
        help=f"log lines kept per job, the first ones (default {DEFAULT_LOG_LINES}, at most 1000)",
    )
    history.add_argument(
        "--drop-label",
        action="append",
        default=[],
        metavar="KEY",
        help="leave labels whose key matches this glob out of the rules (repeatable), e.g. 'airflow-*'",
    )
    history.add_argument(
        "-o", "--output", type=Path, default=None, help="the scenario file to write (default: stdout)"
    )
    check = commands.add_parser(
        "check",
        help="check a scenario file and print it as the JSON PUT /emulator/scenario takes",
        description=(
            "Check a scenario file (YAML or JSON) with the rules the emulator plays it by: an error names "
            "the file, the line, the field and the rule. A good file is printed as one line of JSON, the "
            "body of PUT /emulator/scenario (how a rehearsal plays it on an emulator it started first)."
        ),
    )
    check.add_argument("file", type=Path, metavar="FILE", help="the scenario file")
    return parser


def _check(path: Path) -> int:
    try:
        document = scenario_document(read_scenario_text(path), path.name)
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    sys.stdout.write(json.dumps(document, separators=(",", ":")) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; 0 when done, 2 on bad input (told on stderr)."""
    args = build_parser().parse_args(argv)
    if args.command is None:
        sys.stdout.write(scenario_schema_text())
        return 0
    if args.command == "check":
        return _check(args.file)
    if not 0 <= args.max_log_lines <= 1000:
        sys.stderr.write("--max-log-lines: must be from 0 to 1000\n")
        return 2
    try:
        jobs = read_history(args.pages)
        read_logs(args.logs, jobs)
        text = history_scenario(jobs, args.compression, args.max_log_lines, args.drop_label)
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
