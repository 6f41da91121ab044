"""Two triggerers, one killed (``kill -9``) while both hold deferred tasks: the other takes over.

The session's triggerer is replaced by two, each started with a capacity below the number of runs
(``--capacity 15`` for 20 runs on the Celery profile, ``--capacity 7`` for 10 on the LocalExecutor
stack, whose one executor starts every task process in turn): a triggerer assigns itself every
unassigned trigger up to its capacity, so with the default (1000) the first to look would take them
all; with a capacity below the runs, both hold some. Every job waits for a release file, so no job ends before
the scenario says so. The triggerer holding more triggers is killed; the survivor takes over as many
of them as its capacity allows while their jobs still run (once the dead one's heartbeat is older
than ``[triggerer] triggerer_health_check_threshold``); then the jobs are released and the survivor
takes the rest as its own triggers finish. Every run must succeed with exactly one job, and no process
of the killed triggerer nor any replica may be left. The triggerers that ran before are started again
after (the LocalExecutor stack's one; the Celery profile's two, see test_celery.py).
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from tests.polling import poll_until

from .figures import Figures
from .stack import AirflowStack
from .test_crashes import run_jobs

pytestmark = [pytest.mark.stack, pytest.mark.timeout(1200)]

DAG_ID = "stack_two_triggerers"
#: the scenario's scale: deferred runs and each triggerer's ``--capacity`` (below the runs, so both hold
#: some), on the LocalExecutor stack and on the Celery profile
SCALE_LOCAL = (10, 7)
SCALE_CELERY = (20, 15)
WAIT_FOR_FILE = "import os, time\nwhile not os.path.exists({path!r}):\n    time.sleep(0.5)\nprint('trained')"


def live_triggerers(stack: AirflowStack) -> set[int]:
    data = stack.api(
        "GET", "/api/v2/jobs", params={"job_type": "TriggererJob", "is_alive": "true", "limit": 100}
    )
    return {int(job["id"]) for job in data["jobs"]}


def start_triggerer(stack: AirflowStack, key: str, capacity: int) -> int:
    """Start a triggerer with ``capacity``; its triggerer job id, once it heartbeats."""
    before = live_triggerers(stack)
    stack.start_service("triggerer", key=key, args=["--capacity", str(capacity)])
    new: set[int] = poll_until(
        lambda: live_triggerers(stack) - before, timeout=120, interval=1.0, what=f"{key} heartbeating"
    )
    assert len(new) == 1, new
    return new.pop()


def holders(stack: AirflowStack, run_ids: set[str]) -> dict[str, int | None]:
    """The triggerer id holding each run's deferred task's trigger (``None``: not deferred or unassigned)."""
    data = stack.api(
        "GET", f"/api/v2/dags/{DAG_ID}/dagRuns/~/taskInstances", params={"state": "deferred", "limit": 100}
    )
    out: dict[str, int | None] = dict.fromkeys(run_ids)
    for ti in data["task_instances"]:
        if ti["dag_run_id"] in run_ids:
            trigger: dict[str, Any] | None = ti.get("trigger")
            out[ti["dag_run_id"]] = trigger.get("triggerer_id") if trigger else None
    return out


def trigger_logs(stack: AirflowStack, dag_id: str, run_ids: set[str]) -> str:
    """The trigger log files of the runs' ``train`` tasks: the triggerer writes what a trigger logs to
    ``attempt=N.log.trigger.<triggerer job id>.log`` beside the task's log, one file per triggerer."""
    out = []
    for run_id in sorted(run_ids):
        folder = stack.log_folder / f"dag_id={dag_id}" / f"run_id={run_id}" / "task_id=train"
        out += [
            path.read_text(errors="replace") for path in sorted(folder.glob("attempt=*.log.trigger.*.log"))
        ]
    return "".join(out)


#: what Airflow's triggerer logs when it stops a trigger "by user action" (and calls its on_kill)
USER_ACTION = "Trigger cancelled by user action"


def kill_one_of_two_triggerers(
    stack: AirflowStack,
    keys: tuple[str, str],
    record: Callable[[dict[str, Any]], None],
    scale: tuple[int, int],
) -> None:
    """The scenario of the module doc, on triggerers ``keys`` (the ones of those running before are
    stopped first and started again, with their default capacity, at the end), with ``scale`` (runs,
    each triggerer's capacity). Hands the figures to ``record``, then asserts every run succeeded with
    one job and no process is left."""
    runs, capacity = scale
    release = stack.root / f"two-triggerers-release-{time.monotonic_ns()}"
    before_keys = [key for key in keys if key in stack.procs and stack.procs[key].alive()]
    for key in before_keys:
        stack.procs[key].stop()
    ids: dict[str, int] = {}
    run_ids: set[str] = set()
    try:
        for key in keys:
            ids[key] = start_triggerer(stack, key, capacity)
        started = time.monotonic()
        code = WAIT_FOR_FILE.format(path=str(release))
        run_ids = {stack.trigger(DAG_ID, {"code": code}) for _ in range(runs)}

        def spread() -> Counter[int | None] | None:
            held = Counter(holders(stack, run_ids).values())
            return held if None not in held and all(held[i] for i in ids.values()) else None

        held = poll_until(spread, timeout=600, interval=1.0, what=f"{runs} triggers held by both triggerers")
        victim = max(ids, key=lambda key: held[ids[key]])
        survivor = next(key for key in ids if key != victim)
        tree = stack.tree_pids(stack.procs[victim].pid)
        stack.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        poll_until(
            lambda: not stack.alive(tree),
            timeout=30,
            interval=0.2,
            what=f"no process of the killed {victim} left",
        )

        # The survivor takes over what its capacity allows while those jobs still run.
        own = held[ids[survivor]]
        poll_until(
            lambda: Counter(holders(stack, run_ids).values())[ids[survivor]] > own,
            timeout=180,
            interval=1.0,
            what=f"{survivor} taking over triggers of the killed {victim}",
        )
        took_over_s = time.monotonic() - killed_at
        release.touch()
        states = [stack.wait_run(DAG_ID, run_id, timeout=600) for run_id in sorted(run_ids)]
        elapsed = time.monotonic() - started
        jobs = [run_jobs(stack, DAG_ID, run_id) for run_id in sorted(run_ids)]
        per_run = Counter(len(js) for js in jobs)

        def orphans() -> list[int]:
            return stack.replica_pids(j for js in jobs for j in js)

        poll_until(lambda: not orphans(), timeout=60, what="no replica process of the scenario left")
        figures = {
            "runs": runs,
            "capacity": capacity,
            "succeeded": states.count("success"),
            "jobs_per_run": {str(n): count for n, count in sorted(per_run.items())},
            "held_by_killed": held[ids[victim]],
            "held_by_survivor": own,
            "took_over_s": round(took_over_s),
            "orphans": len(orphans()) + len(stack.alive(tree)),
            "seconds": round(elapsed),
            # a triggerer that lost a trigger it still ran (a late heartbeat) calls its on_kill
            "on_kill_calls": trigger_logs(stack, DAG_ID, run_ids).count(USER_ACTION),
        }
        failed = {
            run_id: [j["state"] for j in js]
            for run_id, js in zip(sorted(run_ids), jobs, strict=True)
            if len(js) != 1
        }
        record(figures)
        assert states == ["success"] * runs, figures
        assert per_run == Counter({1: runs}), (figures, failed)
        assert all(js[0]["state"] == "JOB_STATE_SUCCEEDED" for js in jobs)
        assert figures["orphans"] == 0
    finally:
        release.touch()  # whatever happened, no replica waits forever
        for key in keys:
            if key in stack.procs:
                stack.procs[key].stop()
                stack.procs.pop(key)
        before = live_triggerers(stack)
        for key in before_keys:  # as they were: default capacity
            stack.start_service("triggerer", key=key)
        poll_until(
            lambda: len(live_triggerers(stack) - before) >= len(before_keys),
            timeout=120,
            interval=1.0,
            what=f"{', '.join(before_keys)} back",
        )


def test_kill9_of_one_of_two_triggerers(stack: AirflowStack) -> None:
    kill_one_of_two_triggerers(
        stack,
        ("triggerer", "triggerer-2"),
        lambda figures: Figures.record("crashes", "two_triggerers_kill9", figures),
        SCALE_LOCAL,
    )
