"""``dags/training_logs.py`` end to end, deferred and not: the replicas' lines in the task log, and the
failing worker's last lines in the task's failure."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from operators.harness import logged, run_dag, ti_state

from vertex_emulator.app import Emulator

pytestmark = pytest.mark.slow

PARENT = "projects/test-project/locations/us-central1"
WHEN = datetime(2026, 11, 24, tzinfo=timezone.utc)


@pytest.mark.parametrize("dag_id", ["vertex_dist_training_logs", "vertex_dist_training_logs_sync"])
def test_the_failing_worker_is_explained_in_the_task_log(
    examples: Emulator, load_dags: Any, capfd: Any, dag_id: str
) -> None:
    dag = load_dags("training_logs.py")[dag_id]
    dr = run_dag(dag, logical_date=WHEN)
    assert ti_state(dr, "train") == "failed"
    [job] = examples.store.list("customJobs", PARENT)
    assert job["state"] == "JOB_STATE_FAILED"
    out = logged(capfd)
    # the primary's lines, in order, once each
    steps = [f"[workerpool0-0] step {i}: loss=" for i in range(3)]
    positions = [out.find(step) for step in steps]
    assert -1 not in positions and positions == sorted(positions)
    assert all(out.count(step) == 1 for step in steps)
    # the failing worker's error lines; the healthy worker's INFO lines are not streamed by default
    assert "[workerpool1-1] RuntimeError: cannot read shard 7" in out
    assert "[workerpool1-0] step 0" not in out
    # the failure names the worker and quotes its last lines, its distinctive (stdout) line among them,
    # and leaves out the lines the stream already wrote above: the traceback is in the log once
    diagnosis = out[out.index("Last lines of workerpool1-1 (Cloud Logging):") :]
    assert "shard 7 of the training data is corrupt" in diagnosis
    assert "RuntimeError: cannot read shard 7" not in diagnosis
    assert out.count("[workerpool1-1] RuntimeError: cannot read shard 7") == 1
