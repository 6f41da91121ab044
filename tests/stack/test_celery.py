"""The reliability scenarios on the Celery profile (two workers, two schedulers, two triggerers).

Run in a pytest process of their own (``make stack-celery``): see ``celery_stack`` in conftest.py.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from typing import Any
from urllib.parse import quote

import pytest

from tests.polling import poll_until

from .celery_stack import WORKERS, CeleryStack
from .figures import Figures
from .stack import SHORT_TRAINING
from .test_crashes import SLEEP, attempt_log, job_replicas_gone, run_jobs, wait_job
from .test_triggerers import DAG_ID as TRIGGERERS_DAG
from .test_triggerers import (
    SCALE_CELERY,
    USER_ACTION,
    WAIT_FOR_FILE,
    holders,
    kill_one_of_two_triggerers,
    trigger_logs,
)

pytestmark = [pytest.mark.stack, pytest.mark.timeout(1200)]


def live_jobs(stack: CeleryStack, job_type: str) -> list[dict[str, Any]]:
    """Airflow's live jobs of one type (``SchedulerJob``, ``TriggererJob``): heartbeating, not ended."""
    params = {"job_type": job_type, "is_alive": "true", "limit": 100}
    return list(stack.api("GET", "/api/v2/jobs", params=params)["jobs"])


def test_smoke_a_deferred_and_a_worker_slot_task_succeed(celery_stack: CeleryStack) -> None:
    runs = {
        dag_id: celery_stack.trigger(dag_id, {"code": "print('trained')"})
        for dag_id in ("stack_deferred", "stack_sync")
    }
    states = {dag_id: celery_stack.wait_run(dag_id, run_id, timeout=300) for dag_id, run_id in runs.items()}
    jobs = {dag_id: run_jobs(celery_stack, dag_id, run_id) for dag_id, run_id in runs.items()}
    hosts = {
        dag_id: celery_stack.task_instance(dag_id, run_id, "train").get("hostname")
        for dag_id, run_id in runs.items()
    }

    # two of each heartbeating (polled: a heartbeat a few seconds late on a busy machine is no failure)
    def two_of_each() -> dict[str, int] | None:
        counts = {kind: len(live_jobs(celery_stack, kind)) for kind in ("SchedulerJob", "TriggererJob")}
        return counts if counts == {"SchedulerJob": 2, "TriggererJob": 2} else None

    poll_until(two_of_each, timeout=60, interval=1.0, what="two live schedulers and two live triggerers")
    worker_logs = "".join((celery_stack.root / f"{key}.log").read_text(errors="replace") for key in WORKERS)
    Figures.record(
        "celery",
        "smoke",
        {dag_id: {"outcome": states[dag_id], "jobs": len(jobs[dag_id])} for dag_id in runs},
    )
    assert states == {"stack_deferred": "success", "stack_sync": "success"}, hosts
    assert {dag_id: [j["state"] for j in js] for dag_id, js in jobs.items()} == {
        "stack_deferred": ["JOB_STATE_SUCCEEDED"],
        "stack_sync": ["JOB_STATE_SUCCEEDED"],
    }
    # both tasks went through the Celery workers
    assert all(run_id in worker_logs for run_id in runs.values())


def kill_worker_tree(stack: CeleryStack, key: str) -> list[int]:
    """``kill -9`` of a Celery worker and everything under it (its pool and the task processes, which
    Airflow puts in process groups of their own), as the loss of the worker's machine would; the
    pids that were killed."""
    tree = stack.tree_pids(stack.procs[key].pid)
    stack.kill(key, signal.SIGKILL)
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    poll_until(lambda: not stack.alive(tree), timeout=30, interval=0.2, what=f"{key} gone")
    return tree


def restart_worker(stack: CeleryStack, key: str) -> None:
    stack.start_service("celery", key=key, args=["worker", "--celery-hostname", f"{key}@%h"])


def test_worker_kill9_right_after_create_retry_reattaches(celery_stack: CeleryStack) -> None:
    """The Celery worker running a non-deferred task dies (kill -9) as soon as the task's job exists;
    the retry runs on the other worker and re-attaches to that job."""
    stack = celery_stack
    run_id = stack.trigger("stack_sync", {"code": SLEEP.format(s=45)})
    job = wait_job(
        stack, "stack_sync", run_id, {"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"}
    )
    ti = stack.wait_task_state("stack_sync", run_id, "train", {"running"})
    worker = poll_until(
        lambda: stack.worker_of_pid(int(ti["pid"])) if ti.get("pid") else None,
        timeout=30,
        what="the worker running the task",
    )
    other = next(key for key in WORKERS if key != worker)
    killed = kill_worker_tree(stack, worker)
    try:
        state = stack.wait_run("stack_sync", run_id, timeout=420)
    finally:
        restart_worker(stack, worker)
    ti = stack.task_instance("stack_sync", run_id, "train")
    jobs = run_jobs(stack, "stack_sync", run_id)
    log2 = attempt_log(stack, "stack_sync", run_id, 2)
    poll_until(lambda: job_replicas_gone(stack, job), timeout=60, what="replicas of the job gone")
    Figures.record(
        "celery",
        "worker_kill9",
        {
            "outcome": state,
            "tries": ti["try_number"],
            "jobs": len(jobs),
            "killed_processes": len(killed),
            "orphans": len(stack.alive(killed)),
        },
    )
    assert state == "success"
    assert ti["try_number"] >= 2
    assert [j["name"] for j in jobs] == [job["name"]]
    assert jobs[0]["state"] == "JOB_STATE_SUCCEEDED"
    assert "Re-attaching to " + job["name"] in log2
    # the retry ran on the other worker (the killed one was down until the run ended)
    assert run_id in (stack.root / f"{other}.log").read_text(errors="replace")


def test_deferred_task_marked_failed_is_cancelled_exactly_once(celery_stack: CeleryStack) -> None:
    """A deferred task marked failed through the REST API: its job is cancelled, and Cancel reaches
    the job once, though the API server's listener, the trigger's on_kill and the run listeners of
    two schedulers could each send one (each reads the job first and sends nothing to a job being
    cancelled or ended)."""
    stack = celery_stack
    run_id = stack.trigger("stack_deferred", {"code": SLEEP.format(s=600)})
    job = wait_job(stack, "stack_deferred", run_id, {"JOB_STATE_RUNNING"})
    stack.wait_task_state("stack_deferred", run_id, "train", {"deferred"})
    path = f"/api/v2/dags/stack_deferred/dagRuns/{quote(run_id, safe='')}/taskInstances/train"
    stack.api("PATCH", path, json_body={"new_state": "failed"})
    done = wait_job(stack, "stack_deferred", run_id, {"JOB_STATE_CANCELLED"}, timeout=120)
    run_state = stack.wait_run("stack_deferred", run_id, timeout=120)
    poll_until(lambda: job_replicas_gone(stack, job), timeout=60, what="replicas of the cancelled job gone")

    # Count once every listener has made its decision about the job (each logs it, with the job's
    # name): the API server's (the mark) and a scheduler's (the run's end).
    def decided(pattern: str, *logs: str) -> bool:
        return any(
            pattern in line and job["name"] in line
            for name in logs
            for line in (stack.root / name).read_text(errors="replace").splitlines()
        )

    poll_until(lambda: decided("task marked failed", "api-server.log"), timeout=120, what="the API listener")
    poll_until(
        lambda: decided("run failed", "scheduler-1.log", "scheduler-2.log"),
        timeout=120,
        what="a run listener",
    )
    cancels = stack.emulator_stats()["cancel_calls"].get(job["name"], 0)
    Figures.record(
        "celery",
        "mark_failed_deferred",
        {"job_state": done["state"], "run": run_state, "cancel_calls": cancels, "replicas_left": 0},
    )
    assert done["name"] == job["name"]
    assert len(run_jobs(stack, "stack_deferred", run_id)) == 1
    assert cancels == 1


def test_triggerer_kill9_while_both_hold_deferred_tasks(celery_stack: CeleryStack) -> None:
    """tests/stack/test_triggerers.py's scenario on this profile's two triggerers."""
    kill_one_of_two_triggerers(
        celery_stack,
        ("triggerer-1", "triggerer-2"),
        lambda figures: Figures.record("celery", "triggerer_kill9", figures),
        SCALE_CELERY,
    )


BACKFILL_RUNS = 30
FAULT_CODES = ["UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "INTERNAL"]
HOOK_METHODS = ("CreateCustomJob", "GetCustomJob", "ListCustomJobs", "CancelCustomJob")


def test_scheduler_kill9_mid_backfill_under_faults(celery_stack: CeleryStack) -> None:
    """A 30-run backfill (10 runs at a time, non-deferred tasks) with 20 % of the JobService calls
    failing; one of the two schedulers is killed (kill -9) once a third of the runs ended. The other
    adopts its queued and running tasks: 30 jobs, no duplicate, no replica left."""
    stack = celery_stack
    dag_id = "stack_backfill"

    def runs() -> list[dict[str, Any]]:
        data = stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100})["dag_runs"]
        return [r for r in data if r.get("run_type") == "backfill"]

    def ended() -> list[dict[str, Any]]:
        return [r for r in runs() if r["state"] in ("success", "failed")]

    victim = "scheduler-1"
    stack.set_faults({"error_rate": dict.fromkeys(HOOK_METHODS, 0.2), "error_codes": FAULT_CODES, "seed": 11})
    started = time.monotonic()
    try:
        stack.api("PATCH", f"/api/v2/dags/{dag_id}", json_body={"is_paused": False})
        stack.backfill(
            dag_id, "2024-01-01", f"2024-01-{BACKFILL_RUNS:02d}", code=SHORT_TRAINING, max_active_runs=10
        )
        poll_until(
            lambda: len(ended()) >= BACKFILL_RUNS // 3, timeout=600, interval=1.0, what="a third ended"
        )
        left_at_kill = len(runs()) - len(ended())
        tree = stack.tree_pids(stack.procs[victim].pid)
        stack.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        poll_until(
            lambda: len(runs()) == BACKFILL_RUNS and len(ended()) == BACKFILL_RUNS,
            timeout=900,
            interval=2.0,
            what=f"the {BACKFILL_RUNS}-run backfill ended after the scheduler kill",
        )
        after_kill_s = time.monotonic() - killed_at
    finally:
        stack.set_faults({"error_rate": {}})
        stack.api("PATCH", f"/api/v2/dags/{dag_id}", json_body={"is_paused": True})
        if not stack.procs[victim].alive():
            stack.start_service("scheduler", key=victim)
    elapsed = time.monotonic() - started

    done = runs()
    jobs = [j for j in stack.emulator_jobs() if j.get("labels", {}).get("airflow-dag") == dag_id]
    per_run = Counter(j["labels"]["airflow-run"] for j in jobs)
    duplicates = sum(n - 1 for n in per_run.values() if n > 1)
    succeeded = [r for r in done if r["state"] == "success"]

    def orphans() -> list[int]:
        return stack.replica_pids(jobs)

    poll_until(lambda: not orphans(), timeout=60, what="no replica process of the backfill left")
    stats = stack.emulator_stats()
    Figures.record(
        "celery",
        "scheduler_kill9_backfill",
        {
            "runs": len(done),
            "jobs": len(jobs),
            "succeeded": len(succeeded),
            "duplicates": duplicates,
            "orphans": len(orphans()) + len(stack.alive(tree)),
            "runs_left_at_kill": left_at_kill,
            "injected_faults": sum(stats["injected_faults"].values()),
            "after_kill_s": round(after_kill_s),
            "seconds": round(elapsed),
        },
    )
    assert len(done) == BACKFILL_RUNS
    assert len(jobs) == BACKFILL_RUNS and duplicates == 0, per_run
    assert len(succeeded) == BACKFILL_RUNS, Counter(r["state"] for r in done)
    assert sum(stats["injected_faults"].values()) > 0


FROZEN_RUNS = 6


def test_triggerer_frozen_past_its_health_threshold_then_resumed(celery_stack: CeleryStack) -> None:
    """A triggerer stalls (SIGSTOP of its processes) longer than the health threshold while it holds
    deferred tasks; the other takes their triggers over; the stalled one resumes (SIGCONT) and, as
    Airflow does for a trigger no longer assigned to it, stops them "by user action", which calls
    their on_kill. The tasks are still deferred, so no job may be cancelled: every run succeeds with
    one job and no Cancel reaches any job.

    To know which triggerer holds the triggers, triggerer-2 is frozen while the runs defer, so that
    triggerer-1 takes them all; triggerer-2 is then resumed and triggerer-1 frozen."""
    stack = celery_stack
    release = stack.root / f"frozen-triggerer-release-{time.monotonic_ns()}"
    code = WAIT_FOR_FILE.format(path=str(release))
    groups = {key: stack.procs[key].pid for key in ("triggerer-1", "triggerer-2")}
    run_ids: set[str] = set()
    try:
        os.killpg(groups["triggerer-2"], signal.SIGSTOP)
        run_ids = {stack.trigger(TRIGGERERS_DAG, {"code": code}) for _ in range(FROZEN_RUNS)}

        def one_holder() -> int | None:
            held = set(holders(stack, run_ids).values())
            return held.pop() if len(held) == 1 and None not in held else None

        first = poll_until(one_holder, timeout=600, interval=1.0, what="triggerer-1 holding every trigger")
        os.killpg(groups["triggerer-2"], signal.SIGCONT)

        def both_live() -> set[int] | None:
            ids = {int(job["id"]) for job in live_jobs(stack, "TriggererJob")}
            return ids if len(ids) == 2 else None

        live = poll_until(both_live, timeout=120, interval=1.0, what="both triggerers heartbeating again")
        second = (live - {first}).pop()
        os.killpg(groups["triggerer-1"], signal.SIGSTOP)
        poll_until(
            lambda: set(holders(stack, run_ids).values()) == {second},
            timeout=180,
            interval=1.0,
            what="triggerer-2 holding every trigger",
        )
        os.killpg(groups["triggerer-1"], signal.SIGCONT)
        poll_until(  # a hang guard: alone 79 s for the whole test; once past 180 s beside four stacks
            lambda: USER_ACTION in trigger_logs(stack, TRIGGERERS_DAG, run_ids),
            timeout=360,
            interval=1.0,
            what="triggerer-1 stopping the triggers it lost (calling their on_kill)",
        )
    finally:
        for group in groups.values():
            os.killpg(group, signal.SIGCONT)
        release.touch()
    states = [stack.wait_run(TRIGGERERS_DAG, run_id, timeout=600) for run_id in sorted(run_ids)]
    jobs = [run_jobs(stack, TRIGGERERS_DAG, run_id) for run_id in sorted(run_ids)]
    cancels = stack.emulator_stats()["cancel_calls"]
    sent = sum(cancels.get(str(j["name"]), 0) for js in jobs for j in js)
    logs = trigger_logs(stack, TRIGGERERS_DAG, run_ids)
    Figures.record(
        "celery",
        "triggerer_frozen",
        {
            "runs": FROZEN_RUNS,
            "succeeded": states.count("success"),
            "jobs": sum(len(js) for js in jobs),
            "cancel_calls": sent,
            "on_kill_calls": logs.count(USER_ACTION),
            "left_running": logs.count("Not cancelling job"),
        },
    )
    assert states == ["success"] * FROZEN_RUNS
    assert [len(js) for js in jobs] == [1] * FROZEN_RUNS
    assert sent == 0
