"""Replica logs in the task log on the real stack, read through the API server's log route (the UI's).

* A primary and two workers print numbered lines; ``workerpool1-1`` then prints a distinctive line and
  exits 3. Deferred (lines from the triggerer) and waiting in the worker slot, the task's log shows
  every replica's lines, each exactly once, and the failure names ``workerpool1-1`` and quotes its last
  lines.
* The triggerer is restarted (SIGTERM, then a new one) while a deferred task streams, in a pause of
  the job's output once the stream has saved the cursor of the last line it wrote: every line is in
  the task log exactly once (the new triggerer resumes from the cursor in the task instance's XCom).

The restart goes last: the reliability suite has seen a new triggerer be slow to pick up later
triggers (tests/stack/test_crashes.py).
"""

from __future__ import annotations

import json
import re
import signal
from collections import Counter
from typing import Any
from urllib.parse import quote

import pytest

from tests.polling import poll_until

from .figures import Figures
from .procs import StackError
from .stack import AirflowStack

pytestmark = [pytest.mark.stack, pytest.mark.timeout(1200)]

REPLICAS = ("workerpool0-0", "workerpool1-0", "workerpool1-1")
LINES = 5
DISTINCTIVE = "workerpool1-1 found a poisoned batch 0xDEADBEEF"
TICKS = 80  # tests/stack/dags/stack_dags.py (the first half, a pause, the second half)


def _strings(value: Any) -> list[str]:
    """Every string in a JSON document (the log route's structured records), depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


#: the replica line's own time before its key (``04:30:26.200Z [workerpool0-0] ...``, logs/lines.py)
_LINE_TIME = re.compile(r"^\d{2}:\d{2}:\d{2}\.\d{3}Z (?=\[)")


def task_log(stack: AirflowStack, dag_id: str, run_id: str) -> tuple[list[str], str]:
    """The try's log as the UI gets it: its records' messages (a replica line's time left out), and all
    its text (errors included)."""
    doc = json.loads(stack.task_log(dag_id, run_id, "train", 1))
    events = [
        _LINE_TIME.sub("", str(r.get("event", "")), count=1)
        for r in doc.get("content", [])
        if isinstance(r, dict)
    ]
    return events, "\n".join(_strings(doc))


@pytest.mark.parametrize("dag_id", ["stack_logs_deferred", "stack_logs_sync"])
def test_every_replicas_lines_and_the_failing_workers_last_lines(stack: AirflowStack, dag_id: str) -> None:
    run_id = stack.trigger(dag_id)
    if dag_id == "stack_logs_deferred":
        stack.wait_task_state(dag_id, run_id, "train", {"deferred"}, timeout=180)
    state = stack.wait_run(dag_id, run_id, timeout=300)
    events, text = task_log(stack, dag_id, run_id)
    counts = Counter(events)
    expected = [f"[{key}] {key} says line {i}" for key in REPLICAS for i in range(LINES)]
    expected.append(f"[workerpool1-1] {DISTINCTIVE}")
    # every line was streamed (stream_logs="all"), so the failure points to them instead of quoting
    # them again
    pointer = "The last lines of workerpool1-1 are the replica lines above in this log."
    Figures.record(
        "training_logs",
        dag_id,
        {
            "outcome": state,
            "expected_lines": len(expected),
            "lines_once": sum(counts[line] == 1 for line in expected),
            "names_replica": "The replica workerpool1-1 exited with a non-zero status of 3" in text,
            "last_lines_given": pointer in text and "Last lines of workerpool1-1 (Cloud Logging)" not in text,
        },
    )
    assert state == "failed"
    for line in expected:
        assert counts[line] == 1, f"{line!r} appears {counts[line]} times in:\n{text[-4000:]}"
    assert "The replica workerpool1-1 exited with a non-zero status of 3" in text, text[-4000:]
    assert pointer in text, text[-4000:]
    assert "Last lines of workerpool1-1 (Cloud Logging)" not in text, text[-4000:]


def test_a_triggerer_restart_mid_stream_repeats_and_drops_nothing(stack: AirflowStack) -> None:
    dag_id = "stack_logs_restart"
    run_id = stack.trigger(dag_id)
    stack.wait_task_state(dag_id, run_id, "train", {"deferred"}, timeout=180)

    half = TICKS // 2
    run = quote(run_id, safe="")
    xcom = f"/api/v2/dags/{dag_id}/dagRuns/{run}/taskInstances/train/xcomEntries/vertex_dist_log_cursor"

    def paused_and_saved() -> bool:  # the first half is in the task log and its last line's cursor saved
        events, _ = task_log(stack, dag_id, run_id)
        if f"[workerpool0-0] tick {half - 1}" not in events:
            return False
        try:
            value = str(stack.api("GET", xcom)["value"])
        except StackError:  # not saved yet
            return False
        return f"workerpool0-0.{half:09d}" in value  # tick i is the replica's line i + 1

    poll_until(paused_and_saved, timeout=180, interval=0.5, what="the first half shown, its cursor saved")
    stack.kill("triggerer", signal.SIGTERM)  # a graceful restart, as a deployment does it
    stack.start_service("triggerer")
    assert stack.wait_run(dag_id, run_id, timeout=300) == "success"

    events, text = task_log(stack, dag_id, run_id)
    ticks = Counter(
        int(m.group(1)) for e in events if (m := re.fullmatch(r"\[workerpool0-0\] tick (\d+)", e))
    )
    repeated = sorted(i for i, n in ticks.items() if n > 1)
    dropped = sorted(set(range(TICKS)) - set(ticks))
    resumed = any(e.startswith("Replica logs resume after ") for e in events)
    Figures.record(
        "training_logs",
        "triggerer_restart",
        {"ticks": TICKS, "repeated": len(repeated), "dropped": len(dropped), "resumed": resumed},
    )
    assert not repeated and not dropped, f"repeated {repeated}, dropped {dropped}:\n{text[-6000:]}"
    assert resumed, text[-6000:]  # the second triggerer resumed from the saved cursor, not the start
