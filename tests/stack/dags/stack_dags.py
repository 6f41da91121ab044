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

for dag_id, deferrable in (("stack_deferred", True), ("stack_sync", False)):
    with DAG(dag_id, schedule=None, start_date=START, params=PARAMS, default_args=DEFAULT_ARGS) as dag:
        VertexTrainingOperator(task_id="train", spec=spec(), deferrable=deferrable, poll_interval=1.0)
    globals()[dag_id] = dag

# No retry: a failed job must fail the task with the job's own error (the emulator-restart scenario).
with DAG("stack_noretry", schedule=None, start_date=START, params=PARAMS, default_args={"retries": 0}) as dag:
    VertexTrainingOperator(task_id="train", spec=spec(), deferrable=True, poll_interval=1.0)
stack_noretry = dag

# The canary of the security test comes from a Variable whose name marks it as sensitive; the job's
# env carries it (as Vertex needs it) under a name that marks it as sensitive too.
with DAG("stack_secret", schedule=None, start_date=START, params=PARAMS, default_args=DEFAULT_ARGS) as dag:
    VertexTrainingOperator(
        task_id="train",
        spec=spec(workers=False, env={"TRAINING_API_TOKEN": "{{ var.value.avd_api_secret }}"}),
        deferrable=True,
        poll_interval=1.0,
    )
stack_secret = dag

# Backfilled under random task kills and API faults; not deferrable, so a kill hits a running wait.
with DAG(
    "stack_backfill",
    schedule="@daily",
    start_date=START,
    end_date=START + timedelta(days=49),
    catchup=False,
    max_active_runs=50,
    is_paused_upon_creation=True,
    params=PARAMS,
    default_args={"retries": 4, "retry_delay": timedelta(seconds=1)},
) as dag:
    VertexTrainingOperator(
        task_id="train",
        spec=spec(workers=False),
        deferrable=False,
        poll_interval=1.0,
    )
stack_backfill = dag

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
    VertexTrainingOperator(task_id="train", spec=spec(), deferrable=True, poll_interval=1.0)
stack_timeout = dag
