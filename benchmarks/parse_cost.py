"""1. DAG parse cost: import a DAG file in a fresh interpreter, for our operators, the provider's, and
the floor (``airflow.sdk`` only). Each run is its own process; variants are interleaved run by run so
that a noisy neighbour hits all of them alike."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.runner import BENCH_DIR, child_env, run_json
from benchmarks.stats import Summary, summarize

__all__ = ["PROBE", "ParseVariant", "measure_parse_cost"]

#: Runs in the child: time ``runpy.run_path(dag_file)`` (what a DAG processor does with a file, minus
#: its bookkeeping), then report peak RSS and whether any ``google.cloud`` module got loaded. With a
#: second file (the floor), that one is run first, untimed: the time is then the DAG's cost over the
#: floor, measured in one process (paired), so interpreter and Airflow import noise cancel out.
PROBE = """
import json, resource, runpy, sys, time
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
if len(sys.argv) > 2:
    runpy.run_path(sys.argv[2])
c0, t0 = cpu(), time.perf_counter()
namespace = runpy.run_path(sys.argv[1])
elapsed, cpu_s = time.perf_counter() - t0, cpu() - c0
c1, total = time.perf_counter(), 0
for i in range(300_000):  # the machine's speed right now: a fixed pure-Python loop
    total += i
calib_s = time.perf_counter() - c1
dag = namespace["dag"]
print(json.dumps({
    "import_s": elapsed,
    "cpu_s": cpu_s,
    "calib_s": calib_s,
    "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "tasks": len(dag.tasks),
    "modules": len(sys.modules),
    "google_cloud_modules": sum(1 for m in sys.modules if m.startswith("google.cloud.")),
}))
"""


@dataclass
class ParseVariant:
    key: str
    label: str
    python: str
    dag_file: Path
    #: extra environment of this variant's children
    env: dict[str, str] = field(default_factory=dict)
    import_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    #: paired: the DAG file run right after the floor's in one process (wall, CPU)
    over_floor_s: list[float] = field(default_factory=list)
    over_floor_cpu_s: list[float] = field(default_factory=list)
    #: the fixed loop timed right after each paired import (the host's speed at that moment)
    calib_s: list[float] = field(default_factory=list)
    process_s: list[float] = field(default_factory=list)
    peak_rss_mib: list[float] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Summary]:
        return {
            "import_s": summarize(self.import_s),
            "cpu_s": summarize(self.cpu_s),
            "process_s": summarize(self.process_s),
            "peak_rss_mib": summarize(self.peak_rss_mib),
        }


#: The variants measured paired, over the floor in one process.
PAIRED = ("ours", "provider")


def _once(variant: ParseVariant, home: Path, after: Path | None = None) -> dict[str, Any]:
    start = time.perf_counter()
    argv = [variant.python, "-c", PROBE, str(variant.dag_file)] + ([str(after)] if after else [])
    out: dict[str, Any] = run_json(argv, env=child_env(home, variant.env), timeout=300, cwd=home)
    out["process_s"] = time.perf_counter() - start
    return out


def measure_parse_cost(
    project_python: str,
    anchor_python: str | None,
    runs: int,
    work: Path,
    log: Any = print,
    warmup: bool = True,
) -> list[ParseVariant]:
    """``runs`` measured rounds (after one warm-up round) of every variant; the anchor's are skipped
    when there is no anchor interpreter."""
    dags = BENCH_DIR / "dags"
    variants = [
        ParseVariant("floor", "floor (`airflow.sdk` only), project venv", project_python, dags / "floor.py"),
        ParseVariant("ours", "airflow-vertex-dist operators", project_python, dags / "ours.py"),
    ]
    if anchor_python:
        variants += [
            ParseVariant(
                "floor_anchor", "floor (`airflow.sdk` only), anchor venv", anchor_python, dags / "floor.py"
            ),
            ParseVariant(
                "provider", "apache-airflow-providers-google operators", anchor_python, dags / "provider.py"
            ),
        ]
    home = work / "parse-airflow-home"
    home.mkdir(parents=True, exist_ok=True)
    # warm-up: byte-compile, fill the page cache, write airflow.cfg
    for variant in variants if warmup else ():
        variant.info = _once(variant, home)
    for i in range(runs):
        for variant in variants:
            out = _once(variant, home)
            variant.import_s.append(out["import_s"])
            variant.cpu_s.append(out["cpu_s"])
            variant.process_s.append(out["process_s"])
            variant.peak_rss_mib.append(out["peak_rss_kib"] / 1024)
            variant.info = {k: out[k] for k in ("tasks", "modules", "google_cloud_modules")}
            if variant.key in PAIRED:
                paired = _once(variant, home, after=dags / "floor.py")
                variant.over_floor_s.append(paired["import_s"])
                variant.over_floor_cpu_s.append(paired["cpu_s"])
                variant.calib_s.append(paired["calib_s"])
        log(
            f"  parse round {i + 1}/{runs}: "
            + ", ".join(f"{v.key} {v.import_s[-1] * 1000:.0f} ms" for v in variants)
        )
    return variants
