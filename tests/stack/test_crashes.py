"""Crash scenarios on the real stack, each asserting the run's outcome and the emulator's job count.

* ``kill -9`` of the triggerer while jobs wait, then a new triggerer: every run succeeds, one job each;
* ``kill -9`` of the task's process right after its job was created: the retry re-attaches;
* a running task marked failed, or cleared, through the REST API: its job is cancelled (deferred and
  not), and no replica process is left;
* the emulator killed and restarted mid-run: the job comes back FAILED with the emulator's error and
  the task fails with it (no silent success, no second job);
* the same with a replica that forks a child and a daemon (fork, setsid, fork): no process of the
  replica's tree outlives the emulator, even before it restarts.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from airflow_vertex_dist.hooks.labels import run_labels
from tests.polling import poll_until

from .figures import Figures
from .stack import AirflowStack

pytestmark = [pytest.mark.stack, pytest.mark.timeout(1200)]

SLEEP = "import time; time.sleep({s})"


def run_jobs(stack: AirflowStack, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    labels = run_labels(dag_id, "train", run_id, -1)
    return stack.emulator_jobs(f"labels.airflow-run={labels['airflow-run']}")


def wait_job(stack: AirflowStack, dag_id: str, run_id: str, states: set[str], timeout: float = 120) -> Any:
    def found() -> dict[str, Any] | None:
        jobs = run_jobs(stack, dag_id, run_id)
        return next((j for j in jobs if j.get("state") in states), None)

    return poll_until(found, timeout=timeout, interval=0.3, what=f"a job of {run_id} in {sorted(states)}")


def attempt_log(stack: AirflowStack, dag_id: str, run_id: str, attempt: int) -> str:
    path = (
        stack.log_folder
        / f"dag_id={dag_id}"
        / f"run_id={run_id}"
        / "task_id=train"
        / f"attempt={attempt}.log"
    )
    return path.read_text(errors="replace") if path.exists() else ""


def job_replicas_gone(stack: AirflowStack, job: dict[str, Any]) -> bool:
    job_id = str(job["name"]).rsplit("/", 1)[1]
    work = stack.emulator_state / "work" / job_id
    return not [pid for pid in stack.replica_pids() if os.readlink(f"/proc/{pid}/cwd").startswith(str(work))]


def test_task_process_kill9_retry_reattaches(stack: AirflowStack) -> None:
    """The task's process is SIGKILLed as soon as its job exists; try 2 finds the job and waits on it."""
    run_id = stack.trigger("stack_sync", {"code": SLEEP.format(s=12)})
    job = wait_job(
        stack, "stack_sync", run_id, {"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"}
    )
    ti = stack.wait_task_state("stack_sync", run_id, "train", {"running"})
    assert ti["pid"], ti
    os.kill(int(ti["pid"]), signal.SIGKILL)
    state = stack.wait_run("stack_sync", run_id, timeout=300)
    ti = stack.task_instance("stack_sync", run_id, "train")
    jobs = run_jobs(stack, "stack_sync", run_id)
    Figures.record("crashes", "task_kill9", {"outcome": state, "tries": ti["try_number"], "jobs": len(jobs)})
    assert state == "success"
    assert ti["try_number"] >= 2
    assert [j["name"] for j in jobs] == [job["name"]]
    assert jobs[0]["state"] == "JOB_STATE_SUCCEEDED"
    assert "Re-attaching to " + job["name"] in attempt_log(stack, "stack_sync", run_id, 2)


@pytest.mark.parametrize("dag_id", ["stack_deferred", "stack_sync"])
def test_mark_failed_cancels_the_job(stack: AirflowStack, dag_id: str) -> None:
    run_id = stack.trigger(dag_id, {"code": SLEEP.format(s=600)})
    job = wait_job(stack, dag_id, run_id, {"JOB_STATE_RUNNING"})
    stack.wait_task_state(dag_id, run_id, "train", {"deferred" if dag_id == "stack_deferred" else "running"})
    path = f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/train"
    stack.api("PATCH", path, json_body={"new_state": "failed"})
    done = wait_job(stack, dag_id, run_id, {"JOB_STATE_CANCELLED"}, timeout=120)
    poll_until(lambda: job_replicas_gone(stack, job), timeout=60, what="replicas of the cancelled job gone")
    Figures.record("crashes", f"mark_failed_{dag_id}", {"job_state": done["state"], "replicas_left": 0})
    assert done["name"] == job["name"]
    assert len(run_jobs(stack, dag_id, run_id)) == 1


@pytest.mark.parametrize("dag_id", ["stack_deferred", "stack_sync"])
def test_clear_cancels_the_job(stack: AirflowStack, dag_id: str) -> None:
    run_id = stack.trigger(dag_id, {"code": SLEEP.format(s=600)})
    job = wait_job(stack, dag_id, run_id, {"JOB_STATE_RUNNING"})
    stack.wait_task_state(dag_id, run_id, "train", {"deferred" if dag_id == "stack_deferred" else "running"})
    stack.api(
        "POST",
        f"/api/v2/dags/{dag_id}/clearTaskInstances",
        json_body={"dry_run": False, "dag_run_id": run_id, "task_ids": ["train"], "only_failed": False},
    )

    def cancelled() -> bool:
        jobs = {j["name"]: j for j in run_jobs(stack, dag_id, run_id)}
        return jobs[job["name"]]["state"] == "JOB_STATE_CANCELLED"

    try:
        poll_until(cancelled, timeout=120, what=f"{job['name']} cancelled after the clear")
        poll_until(lambda: job_replicas_gone(stack, job), timeout=60, what="replicas of the cleared job gone")
        Figures.record("crashes", f"clear_{dag_id}", {"job_state": "JOB_STATE_CANCELLED", "replicas_left": 0})
    finally:
        # The cleared task runs again (a cancelled job is not re-attached to: it submits a fresh one);
        # end the run, which cancels whatever job it is waiting on.
        stack.api(
            "PATCH", f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}", json_body={"state": "failed"}
        )

    def all_ended() -> bool:
        return all(
            j["state"] in ("JOB_STATE_CANCELLED", "JOB_STATE_FAILED") for j in run_jobs(stack, dag_id, run_id)
        )

    poll_until(all_ended, timeout=120, what="every job of the failed run ended")


def test_emulator_kill9_and_restart_fails_the_task_loudly(stack: AirflowStack) -> None:
    """The emulator dies mid-run (SIGKILL) and comes back on the same state dir and ports."""
    run_id = stack.trigger("stack_noretry", {"code": SLEEP.format(s=60)})
    job = wait_job(stack, "stack_noretry", run_id, {"JOB_STATE_RUNNING"})
    stack.wait_task_state("stack_noretry", run_id, "train", {"deferred"})
    started = time.monotonic()
    stack.kill("emulator", signal.SIGKILL)
    stack.start_emulator()
    state = stack.wait_run("stack_noretry", run_id, timeout=180)
    jobs = run_jobs(stack, "stack_noretry", run_id)
    log = attempt_log(stack, "stack_noretry", run_id, 1)
    Figures.record(
        "crashes",
        "emulator_restart",
        {
            "outcome": state,
            "jobs": len(jobs),
            "job_state": jobs[0]["state"],
            "seconds": round(time.monotonic() - started),
        },
    )
    assert state == "failed"
    assert [j["name"] for j in jobs] == [job["name"]]
    assert jobs[0]["state"] == "JOB_STATE_FAILED"
    message = jobs[0]["error"]["message"]
    assert "restart" in message
    assert message.splitlines()[0] in log
    assert job_replicas_gone(stack, job)


FORKING = """
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # a child in the replica's group
if os.fork() == 0:  # a daemon: its own session, its parent gone
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
time.sleep(600)
"""


def job_processes(stack: AirflowStack, job: dict[str, Any]) -> list[int]:
    job_id = str(job["name"]).rsplit("/", 1)[1]
    work = str(stack.emulator_state / "work" / job_id)
    out = []
    for pid in stack.replica_pids():
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(work):
                out.append(pid)
        except OSError:
            continue
    return out


def test_emulator_kill9_leaves_no_process_of_a_forking_replica(stack: AirflowStack) -> None:
    """The replica forks a child and a setsid daemon; the emulator dies (SIGKILL): its whole tree goes."""
    run_id = stack.trigger("stack_noretry", {"code": FORKING})
    job = wait_job(stack, "stack_noretry", run_id, {"JOB_STATE_RUNNING"})
    # the supervisor, the replica, its child and the daemon (the daemon's parent has exited)
    tree = poll_until(
        lambda: len(pids := job_processes(stack, job)) >= 4 and pids, timeout=60, what="the replica's tree"
    )
    sessions = {int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3]) for pid in tree}
    assert len(sessions) >= 2  # the daemon left the replica's session
    started = time.monotonic()
    stack.kill("emulator", signal.SIGKILL)
    poll_until(lambda: not job_processes(stack, job), timeout=30, interval=0.2, what="no process of the tree")
    gone_s = time.monotonic() - started
    stack.start_emulator()
    state = stack.wait_run("stack_noretry", run_id, timeout=180)
    jobs = run_jobs(stack, "stack_noretry", run_id)
    Figures.record(
        "crashes",
        "emulator_kill9_forking_replica",
        {"outcome": state, "processes": len(tree), "left": 0, "gone_s": round(gone_s, 1), "jobs": len(jobs)},
    )
    assert state == "failed"
    assert [j["name"] for j in jobs] == [job["name"]]
    assert jobs[0]["error"]["message"].endswith("; its replicas were stopped.")


def test_triggerer_kill9_then_restart(stack: AirflowStack) -> None:
    """Three deferred runs wait on their jobs; the triggerer dies (SIGKILL) and a new one takes over.

    Last of the module: in 2 of 4 runs the new triggerer, after finishing the recovered triggers, did
    not pick up the next deferred task's trigger for over two minutes (not root-caused yet; see
    docs/reliability.md), so the other scenarios run with the first triggerer.
    """
    runs = [stack.trigger("stack_deferred", {"code": SLEEP.format(s=25)}) for _ in range(3)]
    for run_id in runs:
        stack.wait_task_state("stack_deferred", run_id, "train", {"deferred"}, timeout=180)
    stack.kill("triggerer", signal.SIGKILL)
    stack.start_service("triggerer")
    states = [stack.wait_run("stack_deferred", run_id, timeout=300) for run_id in runs]
    counts = [len(run_jobs(stack, "stack_deferred", run_id)) for run_id in runs]
    Figures.record(
        "crashes", "triggerer_kill9", {"runs": 3, "succeeded": states.count("success"), "jobs": counts}
    )
    assert states == ["success"] * 3
    assert counts == [1, 1, 1]
