"""6. Capacity under a stockout: one training job (1 x a2-highgpu-1g, 1 A100) whose region has no A100
left, submitted R times by each side in turn (ours, the provider's, ours, ...), each submission in its own
child (``capacity_child.py``) against one emulator running here.

The emulator's capacity model (``vertex_emulator.Capacity``): no free A100 in us-central1, so a job
asking for one waits PENDING and, ``stockout_after_s`` later, fails with Vertex AI's stockout error
("Resources are insufficient in region: us-central1. ..."); every other region and accelerator is
unlimited. Ours carries a two-rung ladder, the A100 in us-central1 then 1 x g2-standard-8 (1 L4) in
us-east1; the provider's operator submits the first rung's job alone (it has no ladder).

Per submission: from the task's start (ours: ``execute`` entered; the provider: its Create called) to
the first replica RUNNING (the ``startTime`` of the first job that started: the emulator sets it once
the job's replica processes started) or never, to the task's end, the rungs tried (the jobs created, in
order), and the API calls the emulator counted while it ran.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.runner import BENCH_DIR, ChildError, ChildLines, call_delta, child_env

__all__ = ["CapacityResult", "JobSeen", "Submission", "measure_capacity"]

LOCATION = "us-central1"
OTHER_REGION = "us-east1"
A100 = "NVIDIA_TESLA_A100"
#: what every replica runs once it started: the job succeeds at once (its time is not measured)
_TRAINER = "print('trained')"


@dataclass
class JobSeen:
    """One job a submission created, as the emulator's store holds it once the submission ended."""

    region: str
    accelerator: str
    rung: str | None
    state: str
    created: float
    started: float | None
    ended: float | None
    error: str | None


@dataclass
class Submission:
    run: int
    #: the task's start (ours: execute entered; the provider: its Create called), epoch seconds
    started: float
    ended: float
    state: str
    jobs: list[JobSeen] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    #: ours: the XCom's ``rung`` (the rung the job ran on, the rungs left before it)
    rung: dict[str, Any] | None = None

    def __post_init__(self) -> None:  # rebuilt from raw JSON by ``--from-json``
        self.jobs = [j if isinstance(j, JobSeen) else JobSeen(**j) for j in self.jobs]

    @property
    def to_running_s(self) -> float:
        """From the task's start to the first job's ``startTime``; ``math.inf``: never."""
        starts = [j.started for j in self.jobs if j.started is not None]
        return min(starts) - self.started if starts else math.inf

    @property
    def to_end_s(self) -> float:
        return self.ended - self.started

    @property
    def stockout_to_next_create_s(self) -> float:
        """From the first job's end (the stockout) to the next job's Create: the ladder's reaction."""
        if len(self.jobs) < 2 or self.jobs[0].ended is None:
            return math.nan
        return self.jobs[1].created - self.jobs[0].ended

    @property
    def create_to_running_s(self) -> float:
        """From the Create of the job that started to its ``startTime``."""
        for job in self.jobs:
            if job.started is not None:
                return job.started - job.created
        return math.nan

    def path(self) -> str:
        """The rungs tried, in order: ``us-central1 A100 FAILED → us-east1 L4 SUCCEEDED``."""
        parts = []
        for job in self.jobs:
            gpu = job.accelerator.replace("NVIDIA_TESLA_", "").replace("NVIDIA_", "")
            parts.append(f"{job.region} {gpu} {job.state.removeprefix('JOB_STATE_')}")
        return " → ".join(parts) or "no job"


@dataclass
class CapacityResult:
    impl: str
    runs: int
    interval_s: float
    stockout_after_s: float
    deferrable: bool
    submissions: list[Submission] = field(default_factory=list)
    error: str | None = None

    def __post_init__(self) -> None:
        self.submissions = [s if isinstance(s, Submission) else Submission(**s) for s in self.submissions]

    def to_running(self) -> list[float]:
        return [s.to_running_s for s in self.submissions]

    def calls_per_submission(self) -> float:
        if not self.submissions:
            return math.nan
        return sum(sum(s.calls.values()) for s in self.submissions) / len(self.submissions)


def _spec() -> Any:
    from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

    a100 = Machine(machine_type="a2-highgpu-1g", accelerator_type=A100, accelerator_count=1)
    return DistributedTrainingJob(
        display_name="bench-capacity",
        primary=WorkerPool(
            machine=a100,
            container=Container(image_uri="python:3.11", command=(sys.executable, "-c", _TRAINER)),
        ),
    )


def _ladder() -> Any:
    from airflow_vertex_dist.specs import CapacityLadder, MachineOverride, Rung

    l4 = MachineOverride(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)
    return CapacityLadder(
        regions=(OTHER_REGION,),
        rungs=(Rung(name="a100-central"), Rung(name="l4-east", region=OTHER_REGION, machine=l4)),
    )


def _bodies(work: Path) -> Path:
    spec, ladder = _spec(), _ladder()
    path = work / "capacity-body.json"
    path.write_text(
        json.dumps(
            {
                "spec": spec.model_dump(mode="json", exclude_none=True),
                "ladder": ladder.model_dump(mode="json", exclude_none=True),
                "request": spec.to_api(location=LOCATION),
            }
        )
    )
    return path


def _seconds(stamp: Any) -> float | None:
    from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos

    return rfc3339_nanos(str(stamp)) / 1e9 if stamp else None


def _job_seen(job: dict[str, Any]) -> JobSeen:
    pools = (job.get("jobSpec") or {}).get("workerPoolSpecs") or [{}]
    machine = pools[0].get("machineSpec") or {}
    created = _seconds(job.get("createTime"))
    return JobSeen(
        region=str(job["name"]).split("/")[3],
        accelerator=str(machine.get("acceleratorType", "")),
        rung=(job.get("labels") or {}).get("airflow-rung"),
        state=str(job.get("state", "")),
        created=created if created is not None else math.nan,
        started=_seconds(job.get("startTime")),
        ended=_seconds(job.get("endTime")),
        error=((job.get("error") or {}).get("message") or None),
    )


class _Child:
    """A child process kept for every submission of one side (its imports and DB set up once)."""

    def __init__(
        self, em: Any, impl: str, python: str, body: Path, interval: float, deferred: bool, work: Path
    ) -> None:
        self.project = f"bench-capacity-{impl}"
        home = work / f"capacity-airflow-home-{impl}"
        home.mkdir(parents=True, exist_ok=True)
        argv = [
            python, str(BENCH_DIR / "capacity_child.py"), "--impl", impl.split("-")[0],
            "--target", em.grpc_target, "--project", self.project, "--location", LOCATION,
            "--body-file", str(body), "--interval", str(interval),
        ] + (["--deferrable"] if deferred else [])  # fmt: skip
        self.stderr = open(work / f"capacity-{impl}.stderr", "w")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            env=child_env(home), cwd=home,
        )  # fmt: skip
        self.lines = ChildLines(self.proc, f"capacity {impl}", Path(self.stderr.name))

    def read(self, phase: str, deadline: float) -> dict[str, Any]:
        """The child's next message of ``phase`` (``ChildLines.read``)."""
        return self.lines.read(phase, deadline)

    def ask(self, run: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"run": run}) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            self.stderr.close()


def _new_jobs(em: Any, project: str, seen: set[str]) -> list[dict[str, Any]]:
    jobs = []
    for region in (LOCATION, OTHER_REGION):
        for job in em.store.list("customJobs", f"projects/{project}/locations/{region}"):
            if job["name"] not in seen:
                seen.add(job["name"])
                jobs.append(job)
    return sorted(jobs, key=lambda j: str(j.get("createTime", "")))


def _submit(em: Any, child: _Child, run: int, seen: set[str], timeout: float) -> Submission:
    before = em.call_counts()
    child.ask(run)
    answer = child.read("result", time.monotonic() + timeout)
    calls = call_delta(em.call_counts(), before)
    return Submission(
        run=run,
        started=float(answer.get("started") or math.nan),
        ended=float(answer.get("ended") or math.nan),
        state=str(answer.get("state")),
        jobs=[_job_seen(j) for j in _new_jobs(em, child.project, seen)],
        calls=calls,
        error=answer.get("error"),
        rung=answer.get("rung"),
    )


#: the sides measured: (impl, which interpreter, ours waiting deferred)
_SIDES = (("ours", "project", True), ("ours-worker", "project", False), ("provider", "anchor", False))


def measure_capacity(
    project_python: str,
    anchor_python: str | None,
    runs: int,
    interval: float,
    stockout_after: float,
    work: Path,
    log: Any = print,
) -> list[CapacityResult]:
    """R submissions per side (ours deferred, ours waiting in the worker, the provider's when there is
    an anchor), interleaved run by run, after one untimed warm-up submission each."""
    from vertex_emulator.app import Emulator
    from vertex_emulator.core.config import Capacity
    from vertex_emulator.testing import make_config

    capacity = Capacity(stock={LOCATION: {A100: 0}}, stockout_after_s=stockout_after)
    config = make_config(work / "capacity-emulator", capacity=capacity)
    body = _bodies(work)
    pythons = {"project": project_python, "anchor": anchor_python}
    sides = [(impl, pythons[venv], deferred) for impl, venv, deferred in _SIDES if pythons[venv]]
    results = {
        impl: CapacityResult(impl, runs, interval, stockout_after, deferred) for impl, _, deferred in sides
    }
    # a submission takes the stockout, the polls that see it, and the next rung's run
    timeout = 120.0 + 4 * (stockout_after + interval)
    with Emulator(config) as em:
        children: dict[str, _Child] = {}
        seen: dict[str, set[str]] = {impl: set() for impl, _, _ in sides}
        try:
            for impl, python, deferred in sides:
                assert python is not None
                try:
                    children[impl] = child = _Child(em, impl, python, body, interval, deferred, work)
                    child.read("ready", time.monotonic() + 300)
                    _submit(em, child, -1, seen[impl], timeout)  # warm-up, not counted
                except ChildError as exc:
                    results[impl].error = str(exc)[-500:]
            for run in range(runs):
                for impl, _, _ in sides:
                    result = results[impl]
                    if result.error or impl not in children:
                        continue
                    try:
                        sub = _submit(em, children[impl], run, seen[impl], timeout)
                    except ChildError as exc:
                        result.error = str(exc)[-500:]
                        continue
                    result.submissions.append(sub)
                    log(
                        f"  capacity {impl:11s} run {run + 1}/{runs}: first RUNNING after "
                        f"{_fmt(sub.to_running_s)}, ended {sub.state} after {sub.to_end_s:.2f} s; "
                        f"{sub.path()}; calls {sum(sub.calls.values())}"
                    )
        finally:
            for child in children.values():
                child.close()
    return [results[impl] for impl, _, _ in sides]


def _fmt(seconds: float) -> str:
    return "never" if math.isinf(seconds) else f"{seconds:.2f} s"
