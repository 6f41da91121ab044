"""The task log reads in the replicas' order, through dag.test() on the emulator (real replica processes):
each replica line carries its own time, lines are ordered by those times across replicas, the job's end
comes after its last lines, and a ladder resumed on a job that already ended says at once how it ended.

The replicas hand over to one another through marks in a directory, so the order the lines were
printed in is known (it never rests on how threads or processes were scheduled), and the primary waits
a known delay before its last line, so that line's time is at least that much after the others'.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import (
    CapacityLadder,
    Container,
    DistributedTrainingJob,
    Machine,
    Rung,
    WorkerPool,
)
from vertex_emulator.app import Emulator

from .harness import PY, logged, run_dag, ti_state
from .test_capacity import L4, Training, task_jobs
from .test_capacity import spec as ladder_spec

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
#: the primary's wait before its last line (seconds)
DELAY = 1.5

# primary: "epoch 0", then waits for the worker's line, waits DELAY, "epoch 1", exits 0;
# worker: waits for "epoch 0", prints its own line and exits 0.
TRAINER = """
import json, os, pathlib, time
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
me = f"{task['type']}-{task['index']}"
marks = pathlib.Path(SHARED)
deadline = time.monotonic() + 60

def wait_for(name):
    while not (marks / name).exists() and time.monotonic() < deadline:
        time.sleep(0.02)

if me == "workerpool0-0":
    print("order epoch 0", flush=True)
    (marks / "epoch0").touch()
    wait_for("worker")
    time.sleep(DELAY)
    print("order epoch 1", flush=True)
else:
    wait_for("epoch0")
    print("order worker saw epoch 0", flush=True)
    (marks / "worker").touch()
"""

EXPECTED = ["order epoch 0", "order worker saw epoch 0", "order epoch 1"]
_LINE = re.compile(
    r"(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z \[(workerpool\d-\d)\] (order (?:worker saw )?epoch \d)\b"
)


def _spec(tmp_path: Path) -> DistributedTrainingJob:
    marks = tmp_path / "marks"
    marks.mkdir()
    code = f"SHARED = {str(marks)!r}\nDELAY = {DELAY!r}" + TRAINER

    def pool() -> WorkerPool:
        return WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(image_uri="python:3.11", command=(PY, "-c", code)),
        )

    return DistributedTrainingJob(display_name="order", primary=pool(), workers=pool())


def _replica_lines(out: str) -> list[tuple[int, timedelta, str, str]]:
    """(position in the output, the line's own time, replica, text) of every replica line of the run."""
    found = []
    for index, row in enumerate(out.splitlines()):
        match = _LINE.search(row)
        if match:
            h, m, s, ms = (int(g) for g in match.groups()[:4])
            when = timedelta(hours=h, minutes=m, seconds=s, milliseconds=ms)
            found.append((index, when, match.group(5), match.group(6).strip()))
    return found


@pytest.mark.parametrize("deferrable", [False, True])
def test_replica_lines_carry_their_times_in_order_before_the_jobs_end(
    vertex_conn: Emulator, capfd: Any, tmp_path: Path, deferrable: bool
) -> None:
    with DAG(f"log_order_{deferrable}", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train", spec=_spec(tmp_path), deferrable=deferrable, poll_interval=0.3, stream_logs="all"
        )
    dr = run_dag(dag)
    out = logged(capfd)
    assert ti_state(dr, "train") == "success", out[-4000:]
    lines = _replica_lines(out)
    assert [text for *_, text in lines] == EXPECTED, out[-4000:]  # each once, in the order printed
    assert [replica for _, _, replica, _ in lines] == ["workerpool0-0", "workerpool1-0", "workerpool0-0"]
    times = [when for _, when, _, _ in lines]
    assert times == sorted(times)
    # the last line's own time, not the time the task read it (read with the others, after the job ended)
    assert times[2] - times[1] >= timedelta(seconds=DELAY - 0.1), lines
    rows = out.splitlines()
    # the job's end (the trigger's, then the resumed task's when deferred) after its last lines
    ends = [i for i, row in enumerate(rows) if re.search(r"job projects/\S+: \w+ -> SUCCEEDED", row)]
    assert ends and min(ends) > lines[-1][0], "\n".join(rows[min(ends, default=0) - 5 : lines[-1][0] + 2])


def test_a_ladder_resumed_on_a_job_that_ended_says_how_it_ended(vertex_conn: Emulator, capfd: Any) -> None:
    """Deferred: the rung's job fails while the task waits in the triggerer; the task, resumed, says at
    once that the job already ended, as FAILED, and why -- not that the rung "runs" it."""
    ladder = CapacityLadder(rungs=(Rung(name="a100"), Rung(name="l4", machine=L4)))
    with DAG("ladder_resumed_ended", schedule=None, start_date=START) as dag:
        Training(
            task_id="train",
            spec=ladder_spec("import sys; sys.exit(3)"),
            capacity=ladder,
            deferrable=True,
            poll_interval=0.2,
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"
    [job] = task_jobs(vertex_conn)
    out = logged(capfd)
    resumed = out[out.index(f"Deferring: waiting for {job['name']} (rung 1)") :]
    assert f"Rung 1/2 (a100) runs {job['name']}" not in resumed
    said = f"Rung 1/2 (a100): job {job['name']} already ended: FAILED: {job['error']['message']}"
    assert said in resumed, resumed[:4000]
    # said first, before the failure's diagnosis and the task's error
    assert resumed.index(said) < resumed.index("AirflowFailException: user code on rung 1 (a100)")
