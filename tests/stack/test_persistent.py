"""A 10-run backfill on a ladder whose first rung is a persistent resource, deleted mid-run.

The test creates the persistent resource ``shared`` through the emulator's v1 REST API, with room for
3 of the runs' one-replica jobs at once; rung 1 of ``stack_persistent`` runs a job on it (a job that
finds it full waits QUEUED, and past the rung's 10 s ``pending_limit`` leaves for rung 2, the same
machine on demand). Every job trains until the test releases it (a file named by its job id, or one
releasing all). Once the resource's 3 jobs run and the 7 other runs have moved to rung 2, the test
releases 2 of the resource's jobs (they train on it), then deletes the resource through the API while
the third runs on it: the emulator cancels that job, as the service does ("Delete a persistent
resource"), the ladder finds the resource gone, classes it "resource lost" and leaves for rung 2.
Then every job is released.

Expected, from the jobs' times and rungs read through the emulator's API: no run's job created on rung 2
while the resource existed and had room (its rung-1 job was given up while 3 jobs ran on the resource),
every run succeeded with one trained job, no run ever had two live jobs at once, no live job left.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES
from tests.polling import poll_until

from .figures import Figures
from .stack import AirflowStack

pytestmark = [pytest.mark.stack, pytest.mark.timeout(900)]

DAG_ID = "stack_persistent"
RUNS = 10
ROOM = 3  # the resource's replicas: jobs of one replica at once
PARENT = "v1/projects/stack-project/locations/us-central1"
RESOURCE = "projects/stack-project/locations/us-central1/persistentResources/shared"
#: every run's training: until the test releases it (a file named by its job id, or ``all``, in GATE)
TRAINING = (
    "import os, time\n"
    "gate = {gate!r}\n"
    "me = os.path.join(gate, os.environ['CLOUD_ML_JOB_ID'])\n"
    "while not (os.path.exists(me) or os.path.exists(os.path.join(gate, 'all'))):\n"
    "    time.sleep(0.2)\n"
    "print('trained')\n"
)
RESOURCE_BODY = {
    "displayName": "shared",
    "resourcePools": [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": str(ROOM)}],
}


def _when(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def backfill_runs(stack: AirflowStack) -> list[dict[str, Any]]:
    runs = stack.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns", params={"limit": 100})["dag_runs"]
    return [r for r in runs if r.get("run_type") == "backfill"]


def resource_state(stack: AirflowStack) -> str | None:
    resp = stack._http.get(f"{stack.rest_endpoint}/v1/{RESOURCE}")
    if resp.status_code == 404:
        return None
    resp.raise_for_status()
    return str(resp.json().get("state"))


def create_resource(stack: AirflowStack) -> None:
    resp = stack._http.post(
        f"{stack.rest_endpoint}/{PARENT}/persistentResources",
        params={"persistentResourceId": "shared"},
        json=RESOURCE_BODY,
    )
    resp.raise_for_status()
    poll_until(lambda: resource_state(stack) == "RUNNING", timeout=60, what="the resource RUNNING")


def task_jobs(stack: AirflowStack) -> list[dict[str, Any]]:
    every = stack.emulator_jobs()
    return [j for j in every if j.get("labels", {}).get("airflow-dag") == DAG_ID]


def on_resource(job: dict[str, Any]) -> bool:
    return bool(job["jobSpec"].get("persistentResourceId"))


def running_at(jobs: list[dict[str, Any]], t: float) -> int:
    """Jobs on the resource that had started and not ended at ``t``."""
    return sum(
        1
        for j in jobs
        if on_resource(j) and j.get("startTime") and _when(j["startTime"]) <= t
        and (not j.get("endTime") or _when(j["endTime"]) > t)
    )  # fmt: skip


def release(gate: Path, job: dict[str, Any] | str) -> None:
    """Let a job's training end (``"all"``: every job's)."""
    name = job if isinstance(job, str) else str(job["name"]).rsplit("/", 1)[1]
    (gate / name).write_text("")


def live(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [j for j in jobs if j["state"] not in TERMINAL_STATES]


def resource_full_others_moved() -> Any:
    """The resource's 3 jobs run and every other run has a live job on rung 2: those jobs, or None."""

    def check(jobs: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        running = [j for j in live(jobs) if on_resource(j) and j["state"] == "JOB_STATE_RUNNING"]
        moved = [j for j in live(jobs) if j["labels"]["airflow-rung"] == "r2"]
        return running if len(running) == ROOM and len(moved) == RUNS - ROOM else None

    return check


def delete_mid_run(stack: AirflowStack, gate: Path) -> tuple[float, int]:
    """Release 2 of the resource's 3 jobs, then delete it while the third runs: (when, jobs on it)."""
    check = resource_full_others_moved()
    on_it = poll_until(lambda: check(task_jobs(stack)), timeout=300, interval=0.5, what="3 on it, 7 moved")
    for job in on_it[:2]:
        release(gate, job)
    names = {str(j["name"]) for j in on_it[:2]}
    poll_until(
        lambda: all(j["state"] == "JOB_STATE_SUCCEEDED" for j in task_jobs(stack) if j["name"] in names),
        timeout=120,
        what="2 jobs trained on the resource",
    )
    running = sum(1 for j in live(task_jobs(stack)) if on_resource(j))
    deleted_at = time.time()
    resp = stack._http.delete(f"{stack.rest_endpoint}/v1/{RESOURCE}")
    resp.raise_for_status()
    poll_until(lambda: resource_state(stack) is None, timeout=60, what="the resource deleted")
    return deleted_at, running


def runs_left_with_room(jobs: list[dict[str, Any]], deleted_at: float) -> list[str]:
    """Runs whose rung-2 job was made while the resource existed though it had room: their rung-1 job
    was given up (ended without starting) with fewer than ``ROOM`` jobs running on the resource, or
    they have no rung-1 job before it."""
    by_run: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for job in jobs:
        by_run[job["labels"]["airflow-run"]].append(job)
    bad = []
    for run, own in by_run.items():
        for job in own:
            made = _when(job["createTime"])
            if job["labels"]["airflow-rung"] != "r2" or made >= deleted_at:
                continue
            given_up = [
                _when(j["endTime"])
                for j in own
                if j["labels"]["airflow-rung"] == "r1" and not j.get("startTime") and j.get("endTime")
                and _when(j["endTime"]) <= made
            ]  # fmt: skip
            if not given_up or running_at(jobs, max(given_up) - 0.001) < ROOM:
                bad.append(run)
    return bad


def most_live_per_run(jobs: list[dict[str, Any]]) -> int:
    """The most jobs of one run live (created, not ended) at once, from the jobs' times."""
    by_run: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for job in jobs:
        events = by_run[job["labels"]["airflow-run"]]
        events.append((_when(job["createTime"]), 1))
        events.append((_when(job["endTime"]) if job.get("endTime") else float("inf"), -1))
    most = 0
    for events in by_run.values():
        now = 0
        for _, change in sorted(events):  # an end before a create at the same instant
            now += change
            most = max(most, now)
    return most


def test_backfill_10_runs_on_a_persistent_resource_deleted_mid_run(stack: AirflowStack) -> None:
    gate = stack.root / "persistent-gate"
    gate.mkdir()
    create_resource(stack)
    started = time.monotonic()
    try:
        stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json_body={"is_paused": False})
        code = TRAINING.format(gate=str(gate))
        stack.backfill(DAG_ID, "2024-01-01", "2024-01-10", code=code, max_active_runs=RUNS)
        deleted_at, running_at_delete = delete_mid_run(stack, gate)
        release(gate, "all")

        def done() -> list[dict[str, Any]] | None:
            runs = backfill_runs(stack)
            finished = len(runs) == RUNS and all(r["state"] in ("success", "failed") for r in runs)
            return runs if finished else None

        runs = poll_until(done, timeout=600, interval=1.0, what=f"{RUNS} backfill runs finished")
        elapsed = time.monotonic() - started
    finally:
        release(gate, "all")
        stack.api("PATCH", f"/api/v2/dags/{DAG_ID}", json_body={"is_paused": True})
        if resource_state(stack) is not None:
            stack._http.delete(f"{stack.rest_endpoint}/v1/{RESOURCE}")

    jobs = task_jobs(stack)
    poll_until(lambda: not stack.replica_pids(jobs), timeout=60, what="no replica process left")
    lost = [j for j in jobs if j["state"] == "JOB_STATE_CANCELLED" and "being deleted" in str(j.get("error"))]
    trained = Counter(
        ("resource" if on_resource(j) else "on demand") for j in jobs if j["state"] == "JOB_STATE_SUCCEEDED"
    )
    left_with_room = runs_left_with_room(jobs, deleted_at)
    left_live = [j["name"] for j in live(jobs)]
    most_live = most_live_per_run(jobs)
    per_run = Counter(j["labels"]["airflow-run"] for j in jobs if j["state"] == "JOB_STATE_SUCCEEDED")
    Figures.record(
        "persistent",
        "result",
        {
            "runs": len(runs),
            "succeeded": sum(r["state"] == "success" for r in runs),
            "room": ROOM,
            "jobs": len(jobs),
            "trained_on_resource": trained["resource"],
            "trained_on_demand": trained["on demand"],
            "jobs_lost_to_delete": len(lost),
            "running_at_delete": running_at_delete,
            "left_with_room": len(left_with_room),
            "most_live_jobs_per_run": most_live,
            "live_jobs_left": len(left_live),
            "seconds": round(elapsed),
        },
    )
    assert len(runs) == RUNS
    assert all(r["state"] == "success" for r in runs), Counter(r["state"] for r in runs)
    assert sorted(per_run.values()) == [1] * RUNS  # one trained job per run
    assert (trained["resource"], trained["on demand"], len(lost)) == (2, RUNS - 2, 1)
    assert left_with_room == []
    assert most_live == 1
    assert left_live == []
