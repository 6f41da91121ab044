"""2. Waiting at scale: N jobs waiting at once in one triggerer-like event loop (a child process, see
``wait_child.py``) against the emulator running here. The jobs are put RUNNING straight into the
emulator's store (the real peer's state: every API call sees them exactly as it would see a running
job), then all ended within one interval, at seeded random offsets in a random order; the emulator
counts the API calls."""

from __future__ import annotations

import json
import math
import random
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.runner import BENCH_DIR, ChildError, ChildLines, call_delta, child_env

__all__ = ["WaitResult", "measure_waiting"]

LOCATION = "us-central1"


@dataclass
class WaitResult:
    impl: str
    jobs: int
    interval_s: float
    calls_per_interval: float = 0.0
    calls_by_method: dict[str, float] = field(default_factory=dict)
    #: marginal: RSS growth from N/2 to N waiting jobs, per job (one-time costs excluded)
    rss_per_job_kib: float = 0.0
    #: RSS growth from one warm trigger to N waiting jobs, per job (lazy imports, first pages... included)
    rss_per_job_all_kib: float = 0.0
    rss_base_mib: float = 0.0
    rss_steady_mib: float = 0.0
    cpu_per_interval_s: float = 0.0
    #: our shared poller's cycles in the window (a cycle takes its poll time plus the interval)
    cycles: int | None = None
    #: API calls in the whole window
    window_calls: int = 0
    delays_s: list[float] = field(default_factory=list)
    non_success: int = 0
    missing: int = 0
    error: str | None = None

    def calls_per_cycle(self) -> float:
        return self.window_calls / self.cycles if self.cycles else float("nan")

    def delay(self, q: float) -> float:
        """The ``q``-th percentile of end -> event over every job waited on: a job whose success event
        never came (no event, or an error event: the trigger gave up) counts as never (``math.inf``),
        so a trigger that dropped half its jobs has no p50 rather than the p50 of the ones it
        delivered."""
        values = sorted(self.delays_s) + [math.inf] * (self.missing + self.non_success)
        if not values:
            return math.nan
        rank = (len(values) - 1) * q / 100.0
        low, high = math.floor(rank), math.ceil(rank)
        if math.isinf(values[high]):
            return math.inf
        return values[low] + (values[high] - values[low]) * (rank - low)


def _running(body: dict[str, Any]) -> None:
    body["state"] = "JOB_STATE_RUNNING"
    body["startTime"] = body["updateTime"]


def _insert_running(em: Any, parent: str, n: int, labels: dict[str, str]) -> list[str]:
    from vertex_emulator import testing

    names = []
    for i in range(n):
        job = em.store.insert("customJobs", parent, testing.container_job(f"wait-{i}", labels=labels))
        em.store.update(job["name"], _running)
        names.append(str(job["name"]))
    return names


def _end_all(em: Any, names: list[str], spread_s: float, seed: int) -> dict[str, float]:
    """End every job at an offset drawn uniformly from ``[0, spread_s)``, in an order drawn at random
    (seeded: the same in every run). Neither the order nor the offsets follow the order in which the
    triggers started: with jobs ended in that order at even steps, a triggers' polls that keep their
    start order (the provider's, each its own loop) saw nearly one delay for every job, and the p50 was
    the luck of one phase (0.93 s in one run, 3.00 s in the next)."""
    from airflow_vertex_dist.common.rfc3339 import now_rfc3339

    rng = random.Random(seed)
    plan = sorted((rng.uniform(0.0, spread_s), name) for name in names)
    ended: dict[str, float] = {}
    start = time.monotonic()

    def succeed(body: dict[str, Any]) -> None:
        body["state"] = "JOB_STATE_SUCCEEDED"
        body["endTime"] = now_rfc3339()

    for offset, name in plan:
        pause = start + offset - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        ended[name] = time.time()
        em.store.update(name, succeed)
    return ended


def run_one(
    em: Any, impl: str, python: str, n: int, interval: float, work: Path, window_intervals: int = 3
) -> WaitResult:
    from airflow_vertex_dist.hooks.labels import run_labels

    result = WaitResult(impl=impl, jobs=n, interval_s=interval)
    parent = f"projects/bench-wait-{impl}-{n}/locations/{LOCATION}"
    names = _insert_running(em, parent, n + 1, run_labels("bench_wait", f"{impl}_{n}", "scheduled__1"))
    jobs_file = work / f"wait-{impl}-{n}.json"
    jobs_file.write_text(json.dumps(names))
    home = work / "wait-airflow-home"
    home.mkdir(parents=True, exist_ok=True)
    settle = 2 * interval + 1.0
    argv = [
        python, str(BENCH_DIR / "wait_child.py"), "--impl", impl, "--target", em.grpc_target,
        "--rest", em.rest_endpoint, "--jobs-file", str(jobs_file), "--interval", str(interval),
        "--settle", str(settle), "--window-intervals", str(window_intervals),
        "--timeout", str(max(60.0, 10 * interval + n / 20)),
    ]  # fmt: skip
    stderr_path = work / f"wait-{impl}-{n}.stderr"
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=stderr, text=True, env=child_env(home), cwd=home
        )
        lines = ChildLines(proc, f"waiting {impl}", stderr_path)
        deadline = time.monotonic() + 600
        try:
            base = lines.read("base", deadline)
            half = lines.read("half", deadline)
            steady = lines.read("steady", deadline)
            start = lines.read("window_start", deadline)
            before = em.call_counts()
            end = lines.read("window_end", deadline)
            calls = call_delta(em.call_counts(), before)
            ended = _end_all(em, names, interval, seed=n)
            done = lines.read("done", deadline)
            proc.wait(timeout=60)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    result.rss_base_mib = base["rss_kib"] / 1024
    result.rss_steady_mib = steady["rss_kib"] / 1024
    result.rss_per_job_kib = (steady["rss_kib"] - half["rss_kib"]) / max(1, n - half["jobs"])
    result.rss_per_job_all_kib = (steady["rss_kib"] - base["rss_kib"]) / n
    result.calls_by_method = {k: v / window_intervals for k, v in sorted(calls.items())}
    result.calls_per_interval = sum(calls.values()) / window_intervals
    result.window_calls = sum(calls.values())
    result.cpu_per_interval_s = end["cpu_s"] / window_intervals
    if start.get("cycles") is not None and end.get("cycles") is not None:
        result.cycles = int(end["cycles"]) - int(start["cycles"])
    events: dict[str, list[Any]] = done["events"]
    for name in names:
        if name in events:
            fired_at, status = events[name]
            if status == "success":
                result.delays_s.append(max(0.0, fired_at - ended[name]))
            else:  # an error event (the trigger gave up) says nothing of the job's end: never
                result.non_success += 1
    result.missing = int(done["missing"]) + (len(names) - len(events))
    return result


def measure_waiting(
    project_python: str,
    anchor_python: str | None,
    sizes: list[int],
    interval: float,
    work: Path,
    log: Any = print,
) -> list[WaitResult]:
    from vertex_emulator.app import Emulator
    from vertex_emulator.testing import make_config

    impls = [("ours", project_python)] + ([("provider", anchor_python)] if anchor_python else [])
    results: list[WaitResult] = []
    with Emulator(make_config(work / "wait-emulator")) as em:
        for n in sizes:
            for impl, python in impls:
                assert python is not None
                try:
                    res = run_one(em, impl, python, n, interval, work)
                except ChildError as exc:
                    res = WaitResult(impl=impl, jobs=n, interval_s=interval, error=str(exc)[-500:])
                results.append(res)
                log(
                    f"  wait {impl:8s} n={n:5d}: {res.calls_per_interval:7.1f} calls/interval, "
                    f"{res.rss_per_job_kib:7.1f} KiB/job, delay p50 {res.delay(50):.2f}s"
                    + (f"  ERROR {res.error}" if res.error else "")
                )
    return results
