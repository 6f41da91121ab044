"""``python -m benchmarks``: run every benchmark, write the report (see ``docs/benchmarks.md``).

``make bench`` runs the full set against the anchor's virtualenv; ``--quick`` runs tiny counts only to
keep the benchmarks working (CI), never to judge time. Nothing here fails on a timing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.before_after import with_before_and_after
from benchmarks.runner import BENCH_DIR

DEFAULT_ANCHOR = BENCH_DIR / ".venv-anchor" / "bin" / "python"

FULL = {"parse_runs": 7, "wait_sizes": "10,100,1000", "interval": 4.0, "backfill_runs": 200,
        "backfill_repeats": 3, "threads": 32, "launches": 5, "gets": 500,
        "log_sizes": "10,100,1000", "log_interval": 2.0, "log_cycles": 8,
        "capacity_runs": 5, "capacity_interval": 2.0, "stockout_after": 10.0}  # fmt: skip
QUICK = {"parse_runs": 1, "wait_sizes": "10", "interval": 0.5, "backfill_runs": 10,
         "backfill_repeats": 1, "threads": 4, "launches": 1, "gets": 20,
         "log_sizes": "4", "log_interval": 0.5, "log_cycles": 2,
         "capacity_runs": 1, "capacity_interval": 0.5, "stockout_after": 1.0}  # fmt: skip
SECTIONS = ("parse", "wait", "backfill", "emulator", "logs", "capacity")


#: the report's heading of each section (what ``--replace-sections`` swaps)
SECTION_HEADINGS = {
    "parse": "## 1. DAG parse cost",
    "wait": "## 2. Waiting at scale",
    "backfill": "## 3. Backfill submission",
    "emulator": "## 4. The emulator",
    "logs": "## 5. Replica logs in the task log",
    "capacity": "## 6. Capacity under a stockout",
}


def _blocks(text: str) -> tuple[str, dict[str, str], list[str]]:
    """``text`` split at its ``## `` headings: (the part before the first, {heading: block}, order)."""
    head: list[str] = []
    blocks: dict[str, list[str]] = {}
    order: list[str] = []
    current = head
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            heading = line.rstrip("\n")
            order.append(heading)
            current = blocks[heading] = []
        current.append(line)
    return "".join(head), {k: "".join(v) for k, v in blocks.items()}, order


def replace_sections(existing: str, rendered: str, headings: list[str]) -> str:
    """``existing`` with the blocks under ``headings`` taken from ``rendered``; a block the existing
    report lacks goes before its "Ratios" section (or at the end)."""
    head, old, order = _blocks(existing)
    _, new, _ = _blocks(rendered)
    for heading in headings:
        block = new[heading]
        if not block.endswith("\n\n"):
            block = block.rstrip("\n") + "\n\n"
        if heading not in old:
            ratios = next((i for i, h in enumerate(order) if h.startswith("## Ratios")), len(order))
            order.insert(ratios, heading)
        old[heading] = block
    return head + "".join(old[h] for h in order)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument("--quick", action="store_true", help="tiny counts (CI keeps the benchmarks working)")
    p.add_argument(
        "--anchor-python", help=f"the anchor venv's interpreter (default: {DEFAULT_ANCHOR}, if present)"
    )
    p.add_argument("--no-anchor", action="store_true", help="measure ours only (no ratios)")
    p.add_argument(
        "--out",
        type=Path,
        help="the report (default: docs/benchmarks.md; quick: benchmarks/results/quick.md)",
    )
    p.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated subset of {', '.join(SECTIONS)}"
    )
    p.add_argument("--parse-runs", type=int)
    p.add_argument("--wait-sizes", help="comma-separated numbers of waiting jobs")
    p.add_argument("--interval", type=float, help="poll interval of the waiting triggers, seconds")
    p.add_argument("--backfill-runs", type=int)
    p.add_argument("--backfill-repeats", type=int, help="backfill pairs of waves (median reported)")
    p.add_argument("--threads", type=int, help="backfill submitter threads")
    p.add_argument("--launches", type=int, help="emulator create -> running launches")
    p.add_argument("--gets", type=int, help="Get calls per latency series")
    p.add_argument("--log-sizes", help="comma-separated numbers of jobs streaming replica logs")
    p.add_argument("--log-interval", type=float, help="poll interval of the log poller, seconds")
    p.add_argument("--log-cycles", type=int, help="log poller cycles measured per size")
    p.add_argument("--capacity-runs", type=int, help="submissions per side under the stockout")
    p.add_argument("--capacity-interval", type=float, help="poll interval of both operators, seconds")
    p.add_argument(
        "--stockout-after", type=float, help="seconds a stocked-out job waits PENDING before it fails"
    )
    p.add_argument("--keep-work", action="store_true", help="keep the temporary work directory")
    p.add_argument("--raw", type=Path, help="raw results as JSON (default: benchmarks/results/<report>.json)")
    p.add_argument("--from-json", type=Path, help="only render the report again from a run's raw results")
    p.add_argument(
        "--before",
        type=Path,
        help="the earlier report whose ratios the 'Before and after' section sets beside this run's "
        "(default: the --out file as it was before this run; with --from-json: none unless given)",
    )
    p.add_argument(
        "--replace-sections",
        action="store_true",
        help="replace only the measured sections in the existing report (--out), keeping the rest "
        "(`make bench-logs`)",
    )
    return p


def _rerender(raw_path: Path, out: Path, before: str | None) -> None:
    """Render the report again from the raw results a run wrote beside it (no measuring)."""
    from benchmarks.backfill import BackfillResult
    from benchmarks.capacity import CapacityResult
    from benchmarks.emulator_bench import EmulatorResult
    from benchmarks.log_streaming import LogStreamResult
    from benchmarks.parse_cost import ParseVariant
    from benchmarks.report import RunInfo, render
    from benchmarks.waiting import WaitResult

    raw = json.loads(raw_path.read_text())
    text = render(
        RunInfo(**raw["info"]),
        [ParseVariant(**{**v, "dag_file": Path(v["dag_file"])}) for v in raw["parse"]],
        [WaitResult(**w) for w in raw["waiting"]],
        [BackfillResult(**b) for b in raw["backfill"]],
        EmulatorResult(**raw["emulator"]) if raw["emulator"] else None,
        [LogStreamResult(**r) for r in raw.get("logs", [])],
        [CapacityResult(**r) for r in raw.get("capacity", [])],
    )
    text = with_before_and_after(before, text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    _log(f"wrote {out} (from {raw_path})")


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The run's settings: the mode's (quick or full), each overridden by its flag when given."""
    settings: dict[str, Any] = dict(QUICK if args.quick else FULL)
    for key in settings:
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    for key in ("wait_sizes", "log_sizes"):
        _sizes(settings[key])  # a bad list fails now, not after an hour of measuring
    return settings


def _sections(args: argparse.Namespace) -> set[str]:
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(SECTIONS)
    if unknown:
        _parser().error(
            f"--only: unknown section(s) {', '.join(sorted(unknown))} (choose from {', '.join(SECTIONS)})"
        )
    return only


def _anchor_python(args: argparse.Namespace) -> str | None:
    """The anchor venv's interpreter, or None when it is not measured (absent, or ``--no-anchor``)."""
    if args.no_anchor:
        return None
    candidate = Path(args.anchor_python) if args.anchor_python else DEFAULT_ANCHOR
    if candidate.exists():
        return os.path.abspath(candidate)
    if args.anchor_python:
        _parser().error(
            f"--anchor-python: {candidate} does not exist (run `make bench` to create the anchor venv)"
        )
    return None


def _sizes(text: object) -> list[int]:
    return [int(s) for s in str(text).split(",") if s.strip()]


@dataclasses.dataclass
class _Results:
    """What the measured sections found (an unmeasured section stays empty)."""

    parse: list[Any] = dataclasses.field(default_factory=list)
    waiting: list[Any] = dataclasses.field(default_factory=list)
    backfill: list[Any] = dataclasses.field(default_factory=list)
    emulator: Any = None
    logs: list[Any] = dataclasses.field(default_factory=list)
    capacity: list[Any] = dataclasses.field(default_factory=list)

    def raw(self, info: Any) -> dict[str, Any]:
        """The results as JSON (``--from-json`` renders the report again from it)."""
        return {
            "info": dataclasses.asdict(info),
            "parse": [dataclasses.asdict(v) | {"dag_file": str(v.dag_file)} for v in self.parse],
            "waiting": [dataclasses.asdict(w) for w in self.waiting],
            "backfill": [dataclasses.asdict(b) for b in self.backfill],
            "emulator": dataclasses.asdict(self.emulator) if self.emulator else None,
            "logs": [dataclasses.asdict(r) for r in self.logs],
            "capacity": [dataclasses.asdict(r) for r in self.capacity],
        }


def _measure_clients(
    only: set[str], settings: dict[str, Any], python: str, anchor: str | None, work: Path, quick: bool
) -> _Results:
    """Sections 1-3: DAG parse cost, waiting at scale and backfill submissions."""
    from benchmarks.backfill import measure_backfill
    from benchmarks.parse_cost import measure_parse_cost
    from benchmarks.waiting import measure_waiting

    found = _Results()
    if "parse" in only:
        _log(f"1. DAG parse cost: {settings['parse_runs']} runs")
        runs = int(settings["parse_runs"])
        found.parse = measure_parse_cost(python, anchor, runs, work, _log, warmup=not quick)
    if "wait" in only:
        sizes = _sizes(settings["wait_sizes"])
        _log(f"2. waiting at scale: {sizes} jobs, interval {settings['interval']} s")
        found.waiting = measure_waiting(python, anchor, sizes, float(settings["interval"]), work, _log)
    if "backfill" in only:
        repeats = int(settings["backfill_repeats"])
        _log(f"3. backfill: {settings['backfill_runs']} runs x 2 waves x {repeats}")
        found.backfill = measure_backfill(
            python,
            anchor,
            int(settings["backfill_runs"]),
            int(settings["threads"]),
            work,
            _log,
            repeats=repeats,
        )
    return found


def _measure_services(
    found: _Results, only: set[str], settings: dict[str, Any], python: str, anchor: str | None, work: Path
) -> None:
    """Sections 4-6: the emulator, replica log streaming and capacity under a stockout."""
    from benchmarks.capacity import measure_capacity
    from benchmarks.emulator_bench import measure_emulator
    from benchmarks.log_streaming import measure_log_streaming

    if "emulator" in only:
        _log(f"4. emulator: {settings['launches']} launches, {settings['gets']} Gets per series")
        found.emulator = measure_emulator(
            python, anchor, int(settings["launches"]), int(settings["gets"]), work, _log
        )
    if "logs" in only:
        log_sizes = _sizes(settings["log_sizes"])
        _log(
            f"5. replica logs: {log_sizes} jobs streaming, interval {settings['log_interval']} s, "
            f"{settings['log_cycles']} cycles"
        )
        found.logs = measure_log_streaming(
            log_sizes, float(settings["log_interval"]), int(settings["log_cycles"]), work, _log
        )
    if "capacity" in only:
        _log(
            f"6. capacity under a stockout: {settings['capacity_runs']} submissions per side, "
            f"interval {settings['capacity_interval']} s, stockout after {settings['stockout_after']} s"
        )
        found.capacity = measure_capacity(
            python,
            anchor,
            int(settings["capacity_runs"]),
            float(settings["capacity_interval"]),
            float(settings["stockout_after"]),
            work,
            _log,
        )


def _settings_table(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings as the report's table shows them."""
    return {
        "DAG parse runs": settings["parse_runs"],
        "waiting jobs": "/".join(f"{n:,}" for n in _sizes(settings["wait_sizes"])),
        "poll interval": f"{settings['interval']:g} s",
        "window intervals": 3,
        "backfill runs": settings["backfill_runs"],
        "backfill repeats": settings["backfill_repeats"],
        "backfill threads": settings["threads"],
        "emulator launches": settings["launches"],
        "Gets per series": settings["gets"],
        "log-streaming jobs": "/".join(f"{n:,}" for n in _sizes(settings["log_sizes"])),
        "log poll interval": f"{settings['log_interval']:g} s",
        "log poll cycles": settings["log_cycles"],
        "capacity submissions per side": settings["capacity_runs"],
        "capacity poll interval": f"{settings['capacity_interval']:g} s",
        "stockout after": f"{settings['stockout_after']:g} s",
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    settings = _settings(args)
    only = _sections(args)
    project_python = os.path.abspath(sys.executable)
    anchor = _anchor_python(args)
    out = args.out or (
        BENCH_DIR / "results" / "quick.md" if args.quick else BENCH_DIR.parent / "docs" / "benchmarks.md"
    )

    if args.from_json:
        _rerender(args.from_json, out, args.before.read_text() if args.before else None)
        return 0
    if args.before:
        previous: str | None = args.before.read_text()
    else:
        previous = out.read_text() if out.exists() else None

    work = Path(tempfile.mkdtemp(prefix="avd-bench-"))
    # This process hosts the emulators and our hooks: give Airflow an isolated, throwaway home.
    os.environ["AIRFLOW_HOME"] = str(work / "airflow-home")
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"

    from benchmarks.machine import machine_info, versions_of
    from benchmarks.report import RunInfo, render

    started = datetime.now(timezone.utc)
    t0 = time.monotonic()
    load_at_start = os.getloadavg()[0]
    notes = []
    if anchor is None:
        notes.append("The anchor was not measured in this run (no anchor venv, or `--no-anchor`): no ratios.")
    try:
        versions = {"project": versions_of(project_python)}
        if anchor:
            versions["anchor"] = versions_of(anchor)
        found = _measure_clients(only, settings, project_python, anchor, work, args.quick)
        _measure_services(found, only, settings, project_python, anchor, work)
        info = RunInfo(
            mode="quick" if args.quick else "full",
            started=started.strftime("%Y-%m-%d %H:%M UTC"),
            duration_s=time.monotonic() - t0,
            machine=machine_info()
            | {"load_start": round(load_at_start, 2), "load_end": round(os.getloadavg()[0], 2)},
            versions=versions,
            settings=_settings_table(settings),
            notes=notes,
        )
        sections = (found.parse, found.waiting, found.backfill, found.emulator, found.logs, found.capacity)
        text = render(info, *sections)
        out.parent.mkdir(parents=True, exist_ok=True)
        if args.replace_sections and out.exists():
            text = replace_sections(out.read_text(), text, [SECTION_HEADINGS[s] for s in sorted(only)])
        else:
            text = with_before_and_after(previous, text)
        out.write_text(text.rstrip("\n") + "\n")
        raw_path = args.raw or BENCH_DIR / "results" / f"{out.stem}.json"
        raw_path.parent.mkdir(parents=True, exist_ok=True)
        raw_path.write_text(json.dumps(found.raw(info), indent=1, default=str) + "\n")
        _log(f"wrote {out} and {raw_path} ({time.monotonic() - t0:.0f} s)")
    finally:
        if args.keep_work:
            _log(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
