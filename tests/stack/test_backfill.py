"""A 50-run backfill through the REST API under random task kills and 30 % JobService faults.

Expected: exactly 50 jobs (one per run), every run succeeded or failed with the job's real cause in its
log, no duplicate job, no replica process left.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from typing import Any

import pytest

from airflow_vertex_dist.hooks.labels import RUN_LABEL, run_labels
from tests.polling import poll_until

from .figures import Figures
from .stack import SHORT_TRAINING, AirflowStack

pytestmark = [pytest.mark.stack, pytest.mark.timeout(1800)]

DAG_ID = "stack_backfill"
RUNS = 50
FAULT_CODES = ["UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "INTERNAL"]
HOOK_METHODS = ("CreateCustomJob", "GetCustomJob", "ListCustomJobs", "CancelCustomJob")


def backfill_runs(stack: AirflowStack) -> list[dict[str, Any]]:
    runs = stack.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns", params={"limit": 100})["dag_runs"]
    return [r for r in runs if r.get("run_type") == "backfill"]


def running_tis(stack: AirflowStack) -> list[dict[str, Any]]:
    data = stack.api(
        "GET", f"/api/v2/dags/{DAG_ID}/dagRuns/~/taskInstances", params={"state": "running", "limit": 100}
    )
    return list(data["task_instances"])


def without_job(
    stack: AirflowStack, runs: list[dict[str, Any]], jobs: list[dict[str, Any]], kills: Counter[str]
) -> list[dict[str, Any]]:
    """What a failed count says about the runs that have no job: their state, their task's state and
    tries, the kills they took, and the end of their last try's log."""
    with_job = {j["labels"]["airflow-run"] for j in jobs}
    missing = [r for r in runs if run_labels(DAG_ID, "train", r["dag_run_id"])[RUN_LABEL] not in with_job]
    report = []
    for run in missing:
        ti = stack.task_instance(DAG_ID, run["dag_run_id"], "train")
        log = stack.task_log(DAG_ID, run["dag_run_id"], "train", int(ti["try_number"]))
        report.append(
            {
                "run": run["dag_run_id"],
                "run_state": run["state"],
                "ti_state": ti["state"],
                "try_number": ti["try_number"],
                "kills": kills[str(run["dag_run_id"])],
                "log_tail": log[-1500:],
            }
        )
    return report


def test_backfill_50_runs_under_kills_and_faults(stack: AirflowStack) -> None:
    rng = random.Random(20261130)
    stack.set_faults({"error_rate": dict.fromkeys(HOOK_METHODS, 0.3), "error_codes": FAULT_CODES, "seed": 7})
    started = time.monotonic()
    kills: Counter[str] = Counter()
    try:
        stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json_body={"is_paused": False})
        stack.backfill(DAG_ID, "2024-01-01", "2024-02-19", code=SHORT_TRAINING, max_active_runs=10)
        deadline = time.monotonic() + 1500  # a hang guard, not a pace (the time is recorded as a figure)
        while True:
            runs = backfill_runs(stack)
            if len(runs) == RUNS and all(r["state"] in ("success", "failed") for r in runs):
                break
            assert time.monotonic() < deadline, f"backfill not done: {Counter(r['state'] for r in runs)}"
            # kill -9 a random running task now and then (each task instance at most twice)
            for ti in running_tis(stack):
                key = ti["id"]
                if ti.get("pid") and kills[key] < 2 and sum(kills.values()) < 20 and rng.random() < 0.25:
                    try:
                        os.kill(int(ti["pid"]), signal.SIGKILL)
                        kills[key] += 1
                    except ProcessLookupError:
                        pass
            time.sleep(1.0)  # the pace of the random kills, not a wait for a state
    finally:
        stack.set_faults({"error_rate": {}})
        stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json_body={"is_paused": True})
    elapsed = time.monotonic() - started

    runs = backfill_runs(stack)
    jobs = [j for j in stack.emulator_jobs() if j.get("labels", {}).get("airflow-dag") == DAG_ID]
    per_run = Counter(j["labels"]["airflow-run"] for j in jobs)
    duplicates = sum(n - 1 for n in per_run.values() if n > 1)
    succeeded = [r for r in runs if r["state"] == "success"]
    failed = [r for r in runs if r["state"] == "failed"]
    failed_with_cause = 0
    for run in failed:
        ti = stack.task_instance(DAG_ID, run["dag_run_id"], "train")
        log = stack.task_log(DAG_ID, run["dag_run_id"], "train", int(ti["try_number"]))
        if "JOB_STATE_" in log or "Error" in log:
            failed_with_cause += 1

    def orphans() -> list[int]:  # replica processes of the backfill's jobs still alive
        return stack.replica_pids(jobs)

    poll_until(lambda: not orphans(), timeout=60, what="no replica process of the backfill left")
    stats = stack.emulator_stats()
    Figures.record(
        "backfill",
        "result",
        {
            "runs": len(runs),
            "jobs": len(jobs),
            "succeeded": len(succeeded),
            "failed": len(failed),
            "failed_with_cause": failed_with_cause,
            "duplicates": duplicates,
            "orphan_replicas": len(orphans()),
            "task_kills": sum(kills.values()),
            "injected_faults": sum(stats["injected_faults"].values()),
            "seconds": round(elapsed),
        },
    )
    assert len(runs) == RUNS
    assert duplicates == 0, {run: n for run, n in per_run.items() if n > 1}
    assert len(jobs) == RUNS, without_job(stack, runs, jobs, kills)
    assert len(succeeded) + failed_with_cause == RUNS
    assert all(j["state"] == "JOB_STATE_SUCCEEDED" for j in jobs) or failed
    assert sum(kills.values()) > 0 and sum(stats["injected_faults"].values()) > 0
