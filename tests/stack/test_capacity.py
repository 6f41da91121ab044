"""A 20-run backfill on a capacity ladder, within a quota of 8 GPUs, with the first region stocked out.

The emulator (``PUT /emulator/capacity``) has no A100 free in us-central1 (a job there fails with the
region's stockout after 1 s), a quota of 8 A100s there and 8 L4s in us-east1, and refuses at Create a
job over the quota beside the jobs running (``over_quota: refuse``), so a GPU asked for beyond the quota
would show as a quota failure. Each task holds 2 GPUs on either rung and takes 2 slots of an Airflow
pool of 8 (deferred tasks counted: the tasks wait in the triggerer).

Expected: every run succeeds on rung 2 after leaving rung 1 for a stockout (said in its task log), never
more than 8 GPUs asked for or in use at once, one job per rung per run (no duplicate), no live job and no
replica process left.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from datetime import datetime
from typing import Any

import httpx
import pytest

from airflow_vertex_dist.hooks.labels import RUN_LABEL, run_labels
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES
from tests.polling import poll_until

from .figures import Figures
from .stack import SHORT_TRAINING, AirflowStack

pytestmark = [pytest.mark.stack, pytest.mark.timeout(1500)]

DAG_ID = "stack_capacity"
RUNS = 20
POOL = "gpu-quota"
QUOTA = 8
GPUS_PER_JOB = 2
REGIONS = ("us-central1", "us-east1")
CAPACITY = {
    "quota": {"us-central1": {"NVIDIA_TESLA_A100": QUOTA}, "us-east1": {"NVIDIA_L4": QUOTA}},
    "stock": {"us-central1": {"NVIDIA_TESLA_A100": 0}},
    "stockout_after_s": 1.0,
    "over_quota": "refuse",
}
UNLIMITED = {"quota": {}, "stock": {}, "stockout_after_s": 60.0, "over_quota": "queue"}


def backfill_runs(stack: AirflowStack) -> list[dict[str, Any]]:
    runs = stack.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns", params={"limit": 100})["dag_runs"]
    return [r for r in runs if r.get("run_type") == "backfill"]


def task_log(stack: AirflowStack, run_id: str, try_number: int) -> str:
    """A try's task log through the REST API or, when the API has no record of that try (the scheduler
    refused its resumed deferral and retried the task), from the log folder."""
    try:
        return stack.task_log(DAG_ID, run_id, "train", try_number)
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code != 404:
            raise
    folder = stack.log_folder / f"dag_id={DAG_ID}" / f"run_id={run_id}" / "task_id=train"
    return "\n".join(p.read_text() for p in sorted(folder.glob(f"attempt={try_number}.log*")))


def _when(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def most_gpus_asked(jobs: list[dict[str, Any]]) -> int:
    """The most GPUs held by jobs that were created and not yet ended, at any moment."""
    events: list[tuple[float, int]] = []
    for job in jobs:
        events.append((_when(job["createTime"]), GPUS_PER_JOB))
        events.append((_when(job["endTime"]), -GPUS_PER_JOB))
    most = now = 0
    for _, change in sorted(events):  # an end before a create at the same instant
        now += change
        most = max(most, now)
    return most


def test_backfill_20_runs_on_a_ladder_within_8_gpus(stack: AirflowStack) -> None:
    stack.set_capacity(CAPACITY)
    stack.api(
        "POST",
        "/api/v2/pools",
        json_body={"name": POOL, "slots": QUOTA, "description": "GPU quota", "include_deferred": True},
    )
    started = time.monotonic()
    try:
        stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json_body={"is_paused": False})
        stack.backfill(DAG_ID, "2024-01-01", "2024-01-20", code=SHORT_TRAINING, max_active_runs=RUNS)

        def done() -> list[dict[str, Any]] | None:
            runs = backfill_runs(stack)
            finished = len(runs) == RUNS and all(r["state"] in ("success", "failed") for r in runs)
            return runs if finished else None

        # a hang guard, not a pace: 4-5 minutes on a quiet machine, past 10 when make test's other jobs
        # and a second make check share its 2 cores (the time is recorded as a figure)
        runs = poll_until(done, timeout=1200, interval=1.0, what=f"{RUNS} backfill runs finished")
        elapsed = time.monotonic() - started
    finally:
        stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json_body={"is_paused": True})
        stats = stack.emulator_stats()["gpus"]
        stack.set_capacity(UNLIMITED)  # the next scenarios of the session run without limits

    every = [j for region in REGIONS for j in stack.emulator_jobs(location=region)]
    jobs = [j for j in every if j.get("labels", {}).get("airflow-dag") == DAG_ID]
    per_rung: dict[str, Counter[str]] = defaultdict(Counter)
    for job in jobs:
        per_rung[job["labels"]["airflow-run"]][job["labels"]["airflow-rung"]] += 1
    duplicates = sum(n - 1 for rungs in per_rung.values() for n in rungs.values() if n > 1)
    live = [j["name"] for j in jobs if j["state"] not in TERMINAL_STATES]
    poll_until(
        lambda: not stack.replica_pids(jobs), timeout=60, what="no replica process of the backfill left"
    )

    rung_changes = retried = 0
    for run in runs:
        ti = stack.task_instance(DAG_ID, run["dag_run_id"], "train")
        tries = range(1, int(ti["try_number"]) + 1)
        log = "\n".join(task_log(stack, run["dag_run_id"], n) for n in tries)
        retried += len(tries) > 1
        # the rung change as it happened, or (a later try resuming the ladder) in the table of rungs left
        left = "Leaving rung 1 (a100) after" in log or "Resuming the capacity ladder at rung 2" in log
        if left and "stockout" in log and "Rung 2/2 (l4-east) runs" in log:
            rung_changes += 1
    peaks = {f"{q['region']}/{q['accelerator']}": q["peak"] for q in stats["quota"]}
    asked = most_gpus_asked(jobs)
    Figures.record(
        "capacity",
        "result",
        {
            "runs": len(runs),
            "succeeded": sum(r["state"] == "success" for r in runs),
            "jobs": len(jobs),
            "duplicates": duplicates,
            "live_jobs_left": len(live),
            "rung_changes_logged": rung_changes,
            "runs_retried_by_airflow": retried,
            "quota_gpus": QUOTA,
            "peak_gpus_in_use": peaks,
            "most_gpus_asked_at_once": asked,
            "seconds": round(elapsed),
        },
    )
    assert len(runs) == RUNS
    assert all(r["state"] == "success" for r in runs), Counter(r["state"] for r in runs)
    assert duplicates == 0, {run: dict(r) for run, r in per_rung.items()}
    assert live == []
    # every run: one job on rung 1 (stocked out), one on rung 2 (succeeded)
    wanted = {run_labels(DAG_ID, "train", r["dag_run_id"])[RUN_LABEL] for r in runs}
    assert set(per_rung) == wanted
    assert all(rungs == {"r1": 1, "r2": 1} for rungs in per_rung.values()), per_rung
    assert sorted(j["state"] for j in jobs) == ["JOB_STATE_FAILED"] * RUNS + ["JOB_STATE_SUCCEEDED"] * RUNS
    assert rung_changes == RUNS
    assert 0 < peaks["us-east1/NVIDIA_L4"] <= QUOTA and peaks["us-central1/NVIDIA_TESLA_A100"] <= QUOTA
    assert asked <= QUOTA
