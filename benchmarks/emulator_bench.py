"""4. The emulator: create -> every replica RUNNING for the seed's 1 + 4 + 16 Reduction Server layout,
and Get latency over gRPC and REST (stock ``JobServiceClient``), plus Get through each hook; and its
state kept and given back (``Emulator.state``): a reset between tests, a snapshot and a restore, beside
starting a fresh emulator."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.runner import BENCH_DIR, ChildError, child_env, run_json
from benchmarks.stats import percentile

__all__ = ["STATE_JOBS", "EmulatorResult", "measure_emulator"]

PARENT = "projects/bench-emulator/locations/us-central1"

#: Each trainer replica (primary and workers) records when its code started, then idles until stopped.
_TRAINER = """
import json, os, pathlib, time
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
pathlib.Path({markers!r}, task["type"] + "-" + str(task["index"])).write_text(repr(time.time()))
time.sleep(3600)
"""


@dataclass
class EmulatorResult:
    replicas: int = 0
    to_job_running_s: list[float] = field(default_factory=list)
    to_all_replicas_running_s: list[float] = field(default_factory=list)
    to_trainer_code_s: list[float] = field(default_factory=list)
    cancel_s: list[float] = field(default_factory=list)
    get_latency_s: dict[str, list[float]] = field(default_factory=dict)
    #: operation -> seconds each time (``_state_timings``)
    state_s: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def _seed_body() -> dict[str, Any]:
    from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER

    body: dict[str, Any] = SEED_REDUCTION_SERVER.to_api()
    return body


def _replica_keys(body: dict[str, Any]) -> list[str]:
    keys = []
    for pool, spec in enumerate(body["jobSpec"]["workerPoolSpecs"]):
        keys += [f"workerpool{pool}-{i}" for i in range(int(spec.get("replicaCount", 0) or 0))]
    return keys


def _one_launch(em: Any, client: Any, body: dict[str, Any], markers: Path, result: EmulatorResult) -> None:
    from google.cloud.aiplatform_v1 import CustomJob

    from vertex_emulator.testing import wait_for_state

    for old in markers.glob("*"):
        old.unlink()
    keys = _replica_keys(body)
    trainers = sum(1 for k in keys if not k.startswith("workerpool2-"))
    result.replicas = len(keys)
    message = CustomJob.from_json(json.dumps(body))
    start = time.time()
    name = client.create_custom_job(parent=PARENT, custom_job=message).name
    job_running = replicas_running = code_running = None
    deadline = time.monotonic() + 120
    while (
        job_running is None or replicas_running is None or code_running is None
    ) and time.monotonic() < deadline:
        now = time.time()
        if job_running is None and em.store.get(name).get("state") == "JOB_STATE_RUNNING":
            job_running = now - start
        if replicas_running is None:
            views = [em.runner.replica_view(name, key) for key in keys]
            if all(v is not None and v.get("state") == "RUNNING" for v in views):
                replicas_running = now - start
        if code_running is None:
            stamps = [float(p.read_text() or "nan") for p in markers.glob("*") if p.read_text()]
            if len(stamps) == trainers:
                code_running = max(stamps) - start
        time.sleep(0.005)
    if job_running is None or replicas_running is None or code_running is None:
        state = em.store.get(name).get("state")
        result.errors.append(f"{name}: not every replica running within 120 s (job {state})")
    else:
        result.to_job_running_s.append(job_running)
        result.to_all_replicas_running_s.append(replicas_running)
        result.to_trainer_code_s.append(code_running)
    cancel_start = time.time()
    client.cancel_custom_job(name=name)
    wait_for_state(em, name, ["JOB_STATE_CANCELLED", "JOB_STATE_FAILED"], timeout=60, interval=0.01)
    result.cancel_s.append(time.time() - cancel_start)


#: ended jobs (each with a replica log of ``_LOG_LINES`` lines) and objects of 10 KiB in the state a
#: snapshot and a restore carry
STATE_JOBS = 20
_LOG_LINES = 200


def _fill(em: Any, jobs: int) -> None:
    """``jobs`` SUCCEEDED CustomJobs straight in the store, each with a replica log and an object."""
    from vertex_emulator.testing import container_job

    for i in range(jobs):
        job = em.store.insert("customJobs", PARENT, container_job(f"ended-{i}"))
        em.store.update(job["name"], lambda b: b.update(state="JOB_STATE_SUCCEEDED", endTime=b["updateTime"]))
        logs = em.config.state_dir / "logs" / str(job["name"]).rsplit("/", 1)[-1]
        logs.mkdir(parents=True, exist_ok=True)
        (logs / "workerpool0-0.log").write_text("".join(f"step {n} loss 0.1\n" for n in range(_LOG_LINES)))
        bucket = em.config.gcs_root / "bench-models"
        bucket.mkdir(parents=True, exist_ok=True)
        (bucket / f"model-{i}.bin").write_bytes(b"w" * 10240)


def _timed(times: dict[str, list[float]], key: str, action: Any) -> None:
    start = time.perf_counter()
    action()
    times.setdefault(key, []).append(time.perf_counter() - start)


def _state_timings(work: Path, repeats: int, result: EmulatorResult) -> None:
    """A fresh emulator started and stopped (what a test without a reset pays), then on one emulator:
    a reset of an empty state, a reset after one ended job, a snapshot and a restore of ``STATE_JOBS``
    ended jobs with their logs and objects (in process, ``Emulator.state``; over REST add one call)."""
    from vertex_emulator import testing
    from vertex_emulator.app import Emulator

    times = result.state_s
    for i in range(repeats):
        config = testing.make_config(work / f"state-fresh-{i}")
        _timed(times, "fresh", lambda: Emulator(config).start().stop())  # noqa: B023 - called at once
    with Emulator(testing.make_config(work / "state-bench")) as em:
        for _ in range(repeats):
            _timed(times, "reset_empty", em.state.reset)
        for _ in range(repeats):
            _fill(em, 1)
            _timed(times, "reset_one_job", em.state.reset)
        _fill(em, STATE_JOBS)
        for _ in range(repeats):
            _timed(times, "snapshot", lambda: em.state.snapshot("bench", replace=True))
        for _ in range(repeats):
            _timed(times, "restore", lambda: em.state.restore("bench"))


def _gets(get: Any, count: int) -> list[float]:
    for _ in range(5):
        get()
    out = []
    for _ in range(count):
        start = time.perf_counter()
        get()
        out.append(time.perf_counter() - start)
    return out


def measure_emulator(
    project_python: str, anchor_python: str | None, launches: int, gets: int, work: Path, log: Any = print
) -> EmulatorResult:
    from airflow_vertex_dist.specs.examples import TRAINER_IMAGE
    from vertex_emulator import testing
    from vertex_emulator.app import Emulator

    markers = work / "emulator-markers"
    markers.mkdir(parents=True, exist_ok=True)
    image_map = {TRAINER_IMAGE: [sys.executable, "-c", _TRAINER.format(markers=str(markers))]}
    config = testing.make_config(work / "emulator-bench", image_map=image_map, stop_grace_s=2.0)
    result = EmulatorResult()
    body = _seed_body()
    with Emulator(config) as em:
        grpc_client = testing.grpc_client(em)
        rest_client = testing.rest_client(em)
        for i in range(launches):
            _one_launch(em, grpc_client, body, markers, result)
            log(
                f"  emulator launch {i + 1}/{launches}: replicas running after "
                f"{(result.to_all_replicas_running_s or [float('nan')])[-1]:.3f}s"
            )
        # A RUNNING job (its state straight in the store) for the Get latencies.
        job = em.store.insert("customJobs", PARENT, body)
        em.store.update(job["name"], lambda b: b.update(state="JOB_STATE_RUNNING", startTime=b["updateTime"]))
        name = str(job["name"])
        result.get_latency_s["grpc"] = _gets(lambda: grpc_client.get_custom_job(name=name), gets)
        result.get_latency_s["rest"] = _gets(lambda: rest_client.get_custom_job(name=name), gets)
        home = work / "get-airflow-home"
        home.mkdir(parents=True, exist_ok=True)
        impls = [("hook_ours", "ours", project_python)]
        if anchor_python:
            impls.append(("hook_provider", "provider", anchor_python))
        for key, impl, python in impls:
            argv = [python, str(BENCH_DIR / "get_child.py"), "--impl", impl, "--target", em.grpc_target,
                    "--name", name, "--count", str(gets)]  # fmt: skip
            try:
                result.get_latency_s[key] = run_json(argv, env=child_env(home), timeout=600, cwd=home)[
                    "latencies_s"
                ]
            except ChildError as exc:
                result.errors.append(f"{key}: {exc}"[-500:])
        grpc_client.transport.close()
        rest_client.transport.close()
    _state_timings(work, max(3, launches * 4), result)
    log(f"  emulator state: reset {percentile(result.state_s['reset_empty'], 50) * 1000:.1f} ms (median)")
    return result
