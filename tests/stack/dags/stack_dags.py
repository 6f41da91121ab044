"""DAGs of the real-stack tests (parsed by the stack's dag-processor, not by pytest).

Every job has a primary that runs ``{{ params.code }}`` (set per run through the DAG run's conf) and
one worker that sleeps until the job ends, so a cancelled job has replica processes to stop.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow.sdk import DAG, Param

from airflow_vertex_dist.operators.training import VertexTrainingOperator

PY = sys.executable
START = datetime(2024, 1, 1, tzinfo=timezone.utc)
DEFAULT_ARGS: dict[str, Any] = {"retries": 2, "retry_delay": timedelta(seconds=1)}


def pool(code: str, count: int = 1, env: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"image_uri": "python:3.11", "command": [PY, "-c", code]}
    if env:
        container["env"] = env
    return {"machine": {"machine_type": "n1-standard-4"}, "replica_count": count, "container": container}


def spec(*, workers: bool = True, env: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "display_name": "stack-{{ dag.dag_id }}",
        "primary": pool("{{ params.code }}", env=env),
    }
    if workers:
        out["workers"] = pool("import time; time.sleep(600)")
    return out


PARAMS = {"code": Param("print('trained')", type="string")}


def train(spec: dict[str, Any], *, deferrable: bool, task_id: str = "train", **kwargs: Any) -> None:
    """The training task every stack DAG runs: polled every second."""
    VertexTrainingOperator(task_id=task_id, spec=spec, deferrable=deferrable, poll_interval=1.0, **kwargs)


def backfill_dag(dag_id: str, days: int, **kwargs: Any) -> DAG:
    """A daily DAG of ``days`` dates from START, paused when made and with no catchup: the test
    backfills it (or unpauses it) itself."""
    return DAG(
        dag_id,
        schedule="@daily",
        start_date=START,
        end_date=START + timedelta(days=days - 1),
        catchup=False,
        is_paused_upon_creation=True,
        params=PARAMS,
        **kwargs,
    )


for dag_id, deferrable in (("stack_deferred", True), ("stack_sync", False)):
    with DAG(dag_id, schedule=None, start_date=START, params=PARAMS, default_args=DEFAULT_ARGS) as dag:
        train(spec(), deferrable=deferrable)
    globals()[dag_id] = dag

# No retry: a failed job must fail the task with the job's own error (the emulator-restart scenario).
with DAG("stack_noretry", schedule=None, start_date=START, params=PARAMS, default_args={"retries": 0}) as dag:
    train(spec(), deferrable=True)
stack_noretry = dag

# The canary of the security test comes from a Variable whose name marks it as sensitive; the job's
# env carries it (as Vertex needs it) under a name that marks it as sensitive too.
SECRET_ENV = {"TRAINING_API_TOKEN": "{{ var.value.avd_api_secret }}"}
with DAG("stack_secret", schedule=None, start_date=START, params=PARAMS, default_args=DEFAULT_ARGS) as dag:
    train(spec(workers=False, env=SECRET_ENV), deferrable=True)
    # the same job waited for in the worker: its replica lines are masked there as in the triggerer
    train(spec(workers=False, env=SECRET_ENV), deferrable=False, task_id="train_here")
stack_secret = dag

# Backfilled under random task kills and API faults; not deferrable, so a kill hits a running wait.
with backfill_dag(
    "stack_backfill",
    50,
    max_active_runs=50,
    default_args={"retries": 4, "retry_delay": timedelta(seconds=1)},
) as dag:
    train(spec(workers=False), deferrable=False)
stack_backfill = dag

# Backfilled one date at a time, deferred: a backfill's first try submits with its Create alone, and
# its trigger converges with a job of the task that was there before (test_adoption.py).
with backfill_dag("stack_converge", 2, default_args=DEFAULT_ARGS) as dag:
    train(spec(workers=False), deferrable=True)
stack_converge = dag

# A run that times out (dagrun_timeout) while its task waits deferred: the scheduler ends the run and
# the package's listener cancels the job.
with DAG(
    "stack_timeout",
    schedule=None,
    start_date=START,
    params=PARAMS,
    default_args={"retries": 0},
    dagrun_timeout=timedelta(seconds=25),
) as dag:
    train(spec(), deferrable=True)
stack_timeout = dag

# Training logs (issue 15): a primary and two workers print numbered lines; workerpool1-1 then prints a
# distinctive line and exits 3, failing the job. Every replica's lines are streamed (stream_logs="all"),
# waiting in the triggerer or in the worker slot. (No Jinja braces in the code: the spec is templated.)
REPLICA_CODE = """
import json, os, sys, time
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
key = "%s-%d" % (task["type"], task["index"])
for i in range(5):
    print("%s says line %d" % (key, i), flush=True)
    time.sleep(0.3)
if key == "workerpool1-1":
    time.sleep(3)
    print("workerpool1-1 found a poisoned batch 0xDEADBEEF", flush=True)
    sys.exit(3)
time.sleep(300)
"""
LOGS_SPEC = {
    "display_name": "stack-logs-{{ dag.dag_id }}",
    "primary": pool(REPLICA_CODE),
    "workers": pool(REPLICA_CODE, count=2),
}
for dag_id, deferrable in (("stack_logs_deferred", True), ("stack_logs_sync", False)):
    with DAG(dag_id, schedule=None, start_date=START, default_args={"retries": 0}) as dag:
        train(LOGS_SPEC, deferrable=deferrable, stream_logs="all")
    globals()[dag_id] = dag

# A primary printing TICKS numbered lines (0.3 s apart, with a PAUSE_S pause after half of them),
# streamed from the triggerer, which the test restarts in the pause: every line must be in the task
# log exactly once.
TICKS = 80
PAUSE_S = 15
TICK_CODE = (
    "import time\n"
    f"for i in range({TICKS}):\n"
    f"    if i == {TICKS // 2}:\n"
    f"        time.sleep({PAUSE_S})\n"
    "    print('tick %d' % i, flush=True)\n"
    "    time.sleep(0.3)\n"
)
with DAG("stack_logs_restart", schedule=None, start_date=START, default_args={"retries": 0}) as dag:
    train({"display_name": "stack-logs-restart", "primary": pool(TICK_CODE)}, deferrable=True)
stack_logs_restart = dag

# Twenty runs deferred at once, spread over two triggerers (tests/stack/test_triggerers.py): more than
# Airflow's default 16 active runs and tasks of one DAG.
with DAG(
    "stack_two_triggerers",
    schedule=None,
    start_date=START,
    params=PARAMS,
    default_args=DEFAULT_ARGS,
    max_active_runs=30,
    max_active_tasks=30,
) as dag:
    train(spec(workers=False), deferrable=True)
stack_two_triggerers = dag

# A backfill on a capacity ladder (tests/stack/test_capacity.py): rung 1 asks for A100s in the
# connection's region (stocked out by the test), rung 2 for L4s in us-east1. Each rung's job holds 2 GPUs
# (a primary and a worker of 1 GPU each), so gpu_pool gives the task 2 slots of the "gpu-quota" pool.
A100 = {"machine_type": "a2-highgpu-1g", "accelerator_type": "NVIDIA_TESLA_A100", "accelerator_count": 1}
GPU_LADDER_SPEC = {
    "display_name": "stack-ladder",
    "primary": {**pool("{{ params.code }}"), "machine": A100},
    "workers": {**pool("import time; time.sleep(600)"), "machine": A100},
}
GPU_LADDER = {
    "regions": ["us-east1"],
    "rungs": [
        {"name": "a100"},
        {
            "name": "l4-east",
            "region": "us-east1",
            "machine": {
                "machine_type": "g2-standard-8",
                "accelerator_type": "NVIDIA_L4",
                "accelerator_count": 1,
            },
        },
    ],
}
with backfill_dag(
    "stack_capacity", 20, max_active_runs=20, max_active_tasks=20, default_args=DEFAULT_ARGS
) as dag:
    train(GPU_LADDER_SPEC, capacity=GPU_LADDER, gpu_pool="gpu-quota", deferrable=True)
stack_capacity = dag

# A backfill on a ladder whose first rung is a persistent resource (tests/stack/test_persistent.py):
# "shared", made by the test with room for 3 of these one-replica jobs at once; a job waiting QUEUED on
# the full resource past 10 s leaves for rung 2, the same machine on demand. The test deletes the resource
# mid-run.
SHARED_RESOURCE = {
    "resource_id": "shared",
    "pools": [{"machine": {"machine_type": "n1-standard-4"}, "replica_count": 3}],
}
PERSISTENT_LADDER = {
    "rungs": [
        {"name": "shared", "persistent_resource": {"resource": SHARED_RESOURCE}, "pending_limit": 10},
        {"name": "on-demand"},
    ],
}
with backfill_dag(
    "stack_persistent", 10, max_active_runs=10, max_active_tasks=10, default_args=DEFAULT_ARGS
) as dag:
    train(spec(workers=False), capacity=PERSISTENT_LADDER, deferrable=True)
stack_persistent = dag
