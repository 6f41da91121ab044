"""3. Backfill submission: R runs of a training task submitted at once, then again (every task retried),
``repeats`` times: API calls per submission, wall time per wave (the median of the repeats), and
duplicate jobs (more than one job for one run)."""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.runner import BENCH_DIR, ChildError, ChildLines, call_delta, child_env

__all__ = ["BackfillResult", "measure_backfill"]

LOCATION = "us-central1"


@dataclass
class BackfillResult:
    impl: str
    runs: int
    threads: int
    wall_s: list[float] = field(default_factory=list)
    created: list[int] = field(default_factory=list)
    calls: list[dict[str, int]] = field(default_factory=list)
    jobs: int = 0
    duplicates: int = 0
    error: str | None = None

    def _of(self, wave: int, values: list[Any]) -> list[Any]:
        """``values`` (one a wave) of the first-try waves (``wave`` 0) or the retry waves (1)."""
        return values[wave::2]

    def calls_per_submission(self, wave: int) -> float:
        """Calls per submission of the first-try waves (``wave`` 0) or the retry waves (1)."""
        calls = self._of(wave, self.calls)
        return sum(sum(c.values()) for c in calls) / (self.runs * len(calls)) if calls else float("nan")

    def wall(self, wave: int) -> float:
        """The median wall time of the first-try waves (``wave`` 0) or the retry waves (1)."""
        walls = self._of(wave, self.wall_s)
        return statistics.median(walls) if walls else float("nan")

    def calls_of(self, wave: int) -> dict[str, int]:
        """The calls of the first-try waves (``wave`` 0) or the retry waves (1), summed."""
        out: dict[str, int] = {}
        for calls in self._of(wave, self.calls):
            for method, n in calls.items():
                out[method] = out.get(method, 0) + n
        return out


def _body() -> dict[str, Any]:
    from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER

    body: dict[str, Any] = SEED_REDUCTION_SERVER.to_api()
    return body


def run_one(
    em: Any, impl: str, python: str, runs: int, threads: int, work: Path, repeats: int = 1, round_: int = 0
) -> BackfillResult:
    result = BackfillResult(impl=impl, runs=runs, threads=threads)
    project = f"bench-backfill-{impl}-{runs}-{round_}"
    body_file = work / "backfill-body.json"
    body_file.write_text(json.dumps(_body()))
    home = work / "backfill-airflow-home"
    home.mkdir(parents=True, exist_ok=True)
    argv = [
        python, str(BENCH_DIR / "backfill_child.py"), "--impl", impl, "--target", em.grpc_target,
        "--project", project, "--location", LOCATION, "--body-file", str(body_file),
        "--runs", str(runs), "--threads", str(threads), "--repeats", str(repeats),
    ]  # fmt: skip
    stderr_path = work / f"backfill-{impl}.stderr"
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=child_env(home),
            cwd=home,
        )
        assert proc.stdin is not None
        lines = ChildLines(proc, f"backfill {impl}", stderr_path)
        deadline = time.monotonic() + 600
        try:
            for _wave in range(2 * repeats):
                lines.read("wave_start", deadline)
                before = em.call_counts()
                proc.stdin.write("go\n")  # the wave's calls start only now, after the count was read
                proc.stdin.flush()
                lines.read("wave_end", deadline)
                result.calls.append(call_delta(em.call_counts(), before))
            done = lines.read("done", deadline)
            proc.wait(timeout=60)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    result.wall_s = [w["wall_s"] for w in done["waves"]]
    result.created = [w["created"] for w in done["waves"]]
    jobs = em.store.list("customJobs", f"projects/{project}/locations/{LOCATION}")
    per_run: dict[str, int] = {}
    for job in jobs:
        run = (job.get("labels") or {}).get("airflow-run", "?")
        per_run[run] = per_run.get(run, 0) + 1
    result.jobs = len(jobs) - 1  # less the child's warm-up run
    result.duplicates = sum(count - 1 for count in per_run.values())
    return result


def measure_backfill(
    project_python: str,
    anchor_python: str | None,
    runs: int,
    threads: int,
    work: Path,
    log: Any = print,
    repeats: int = 1,
) -> list[BackfillResult]:
    from vertex_emulator.app import Emulator
    from vertex_emulator.core.config import Faults
    from vertex_emulator.testing import make_config

    # Jobs stay QUEUED (as a backfill's jobs would, waiting for quota): no replica processes start.
    config = make_config(work / "backfill-emulator", faults=Faults(queued_s=3600.0))
    impls = [("ours", project_python), ("ours-worker", project_python)]
    impls += [("provider", anchor_python)] if anchor_python else []
    results = {impl: BackfillResult(impl=impl, runs=runs, threads=threads) for impl, _ in impls}
    with Emulator(config) as em:
        # Rounds interleave the submitters, so drift on the host (another process, the store growing)
        # falls on each alike; every round is a child of its own, on runs of its own.
        for round_ in range(repeats):
            for impl, python in impls:
                assert python is not None
                total = results[impl]
                if total.error:
                    continue
                try:
                    res = run_one(em, impl, python, runs, threads, work, 1, round_)
                except ChildError as exc:
                    total.error = str(exc)[-500:]
                    log(f"  backfill {impl:11s} round {round_ + 1}: ERROR {total.error}")
                    continue
                total.wall_s += res.wall_s
                total.created += res.created
                total.calls += res.calls
                total.jobs += res.jobs
                total.duplicates += res.duplicates
                log(
                    f"  backfill {impl:11s} round {round_ + 1}: waves {[round(w, 2) for w in res.wall_s]} s, "
                    f"calls/submission {[round(res.calls_per_submission(w), 2) for w in (0, 1)]}, "
                    f"jobs {res.jobs}, duplicates {res.duplicates}"
                )
    return list(results.values())
