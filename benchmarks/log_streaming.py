"""Replica logs streaming at scale: Logging read calls per interval, and print-to-task-log delay.

``python -m benchmarks.log_streaming --sizes 10,100,1000 --interval 2`` starts an emulator, stores N
CustomJobs whose two replicas' structured logs a writer thread appends to as their supervisors would
(stdout records stamped when written; a line carries the wall time it was written), subscribes every
job to one shared log poller (``logs/poller.py``, the one a triggerer runs) and counts the
emulator's ``ListLogEntries`` calls per poll interval, and the delay from a line being written to the
poller handing it to its trigger (which writes it to the task log). The replicas are files, not
processes: what is measured is the read side. Prints Markdown rows; ``make bench`` (and
``make bench-logs``, this section alone) puts them in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vertex_emulator.app import Emulator
    from vertex_emulator.runtime.replica_output import RecordLog

__all__ = ["HEADER", "LogStreamResult", "main", "measure", "measure_log_streaming"]


@dataclass
class LogStreamResult:
    jobs: int
    interval_s: float
    cycles: int
    read_calls: int
    lines: int
    delay_p50_s: float
    delay_p99_s: float
    error: str | None = None

    @property
    def calls_per_interval(self) -> float:
        return self.read_calls / max(1, self.cycles)

    def row(self) -> str:
        if self.error:
            return f"| {self.jobs:,} | {self.interval_s:g} s | error: {self.error[:160]} | | | | |"
        return (
            f"| {self.jobs:,} | {self.interval_s:g} s | {self.cycles} | {self.read_calls} | "
            f"{self.calls_per_interval:.2f} | {self.lines:,} | "
            f"{self.delay_p50_s:.2f} / {self.delay_p99_s:.2f} |"
        )


HEADER = (
    "| jobs streaming | poll interval | poll cycles | entries.list calls | calls per interval | lines | "
    "print → task log p50 / p99 (s) |\n|---|---|---|---|---|---|---|"
)


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


#: the connection the shared log poller's hook reads, pointed at the benchmark's emulator while it runs
_CONN_ENV = "AIRFLOW_CONN_VERTEX_DIST_DEFAULT"


def measure(work: Path, jobs: int, interval: float, cycles: int, seed: int = 0) -> LogStreamResult:
    from vertex_emulator.app import Emulator
    from vertex_emulator.runtime.replica_output import RecordLog
    from vertex_emulator.testing import make_config

    config = make_config(work)
    saved_conn = os.environ.get(_CONN_ENV)
    with Emulator(config) as em:
        os.environ[_CONN_ENV] = json.dumps(
            {
                "conn_type": "vertex_dist",
                "extra": {"project": "test-project", "api_endpoint": em.grpc_target, "emulator": True},
            }
        )
        ids, files = _store_jobs(em, Path(config.state_dir), jobs)
        stop = threading.Event()
        rng = random.Random(seed)

        # each replica's structured log, written as its supervisor writes it (stdout, stamped on write)
        logs = {path: RecordLog(str(path)) for path in files}
        writer = threading.Thread(target=_write, args=(logs, files, jobs, interval, stop, rng), daemon=True)
        try:
            done, calls, delays = asyncio.run(_stream(em, ids, interval, cycles, writer, stop))
        finally:
            stop.set()
            if writer.is_alive():
                writer.join(timeout=10)
            for log in logs.values():
                log.close()
            if saved_conn is None:
                os.environ.pop(_CONN_ENV, None)
            else:
                os.environ[_CONN_ENV] = saved_conn
    return LogStreamResult(
        jobs=jobs,
        interval_s=interval,
        cycles=done,
        read_calls=calls,
        lines=len(delays),
        delay_p50_s=statistics.median(delays) if delays else float("nan"),
        delay_p99_s=_percentile(delays, 0.99),
    )


def _store_jobs(em: Emulator, state_dir: Path, jobs: int) -> tuple[list[str], list[Path]]:
    """``jobs`` CustomJobs in the emulator's store: their ids, and their two replicas' log files."""
    from vertex_emulator.runtime.log_records import records_path
    from vertex_emulator.testing import PARENT

    files: list[Path] = []
    ids: list[str] = []
    for i in range(jobs):
        job = em.store.insert("customJobs", PARENT, {"displayName": f"stream-{i}"})
        job_id = str(job["name"]).rsplit("/", 1)[-1]
        ids.append(job_id)
        folder = state_dir / "logs" / job_id
        folder.mkdir(parents=True)
        for key in ("workerpool0-0", "workerpool1-0"):
            files.append(records_path(folder, key))
    return ids, files


def _write(
    logs: dict[Path, RecordLog],
    files: list[Path],
    jobs: int,
    interval: float,
    stop: threading.Event,
    rng: random.Random,
) -> None:
    """The writer thread: about two lines per job and interval, spread over the interval."""
    per_tick = max(1, jobs // 10)
    while not stop.is_set():
        for path in rng.sample(files, min(per_tick, len(files))):
            logs[path].append("stdout", [f"t={time.time():.6f} loss=0.1"])
        stop.wait(interval / 10 * 0.5)


async def _stream(
    em: Emulator,
    ids: list[str],
    interval: float,
    cycles: int,
    writer: threading.Thread,
    stop: threading.Event,
) -> tuple[int, int, list[float]]:
    """Every job subscribed to one shared log poller: the poll cycles and ``entries.list`` calls of
    ``cycles`` cycles once the writer runs, and each line's delay from written to handed over."""
    from airflow_vertex_dist.logs.poller import ReadBudget, get_log_poller

    poller = get_log_poller("test-project", budget=ReadBudget(6000))
    subs = [poller.subscribe(job_id, selection="all", interval=interval) for job_id in ids]
    delays: list[float] = []

    async def drain() -> None:
        while True:
            for sub in subs:
                for line in sub.take():
                    delays.append(time.time() - float(line.text.split()[0][2:]))
            await asyncio.sleep(0.01)  # the consumers' own pace, not a wait for state

    await poller.next_cycle()  # the first cycle reads the (empty) history
    writer.start()
    start_cycles, start_calls = poller.cycles, em.logs.calls
    drainer = asyncio.get_running_loop().create_task(drain())
    for _ in range(cycles):
        await poller.next_cycle()
    measured = (poller.cycles - start_cycles, em.logs.calls - start_calls)
    stop.set()
    drainer.cancel()
    for sub in subs:
        sub.close()
    return measured[0], measured[1], delays


def measure_log_streaming(
    sizes: list[int], interval: float, cycles: int, work: Path, log: Callable[[str], None] = print
) -> list[LogStreamResult]:
    """One ``measure`` per size, each with its own emulator in a fresh directory under ``work``;
    a size that fails gives a row with its error (the other sizes still run)."""
    results = []
    for size in sizes:
        folder = Path(tempfile.mkdtemp(prefix=f"logs-{size}-", dir=work))
        try:
            result = measure(folder, size, interval, cycles)
        except Exception as exc:  # a benchmark reports, it does not stop the run
            result = LogStreamResult(size, interval, 0, 0, 0, float("nan"), float("nan"), error=repr(exc))
        log(f"   {size:,} jobs: {result.calls_per_interval:.2f} calls per interval, "
            f"p50 {result.delay_p50_s:.2f} s, p99 {result.delay_p99_s:.2f} s")  # fmt: skip
        results.append(result)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.log_streaming", description=__doc__)
    parser.add_argument("--sizes", default="10,100,1000", help="comma-separated numbers of streaming jobs")
    parser.add_argument("--interval", type=float, default=2.0, help="poll interval, seconds")
    parser.add_argument("--cycles", type=int, default=8, help="poll cycles measured per size")
    args = parser.parse_args(argv)
    print(HEADER)
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-logs-") as work:
            print(measure(Path(work), size, args.interval, args.cycles).row(), flush=True)


if __name__ == "__main__":
    main()
