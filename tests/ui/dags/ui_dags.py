"""DAGs of the job view's browser tests (parsed by their stack's dag-processor, not by pytest).

* ``ui_layout``: the README's pool layout (a primary ``n1-highmem-96`` with 8 x ``NVIDIA_TESLA_V100``,
  4 workers like it, a Reduction Server sized ``"auto"``: 16 reducers), its replicas quick ``python -c``
  programs: each prints a line; the primary then waits for the file ``params.go_file``, prints
  ``EPOCH_LINE`` and waits for ``params.done_file`` before it ends (and the job with it).
* ``ui_study``: a 6-trial grid study over an integer ``x`` in [1, 6], each trial reporting its score
  ``x * step / (1 + (x - 4) ** 2)`` at steps 1 to 3, a second apart, through cloudml-hypertune: the
  best trial is x = 4.
* ``ui_ladder``: a capacity ladder whose first rung asks for an A100 in the connection's region (the
  browser test stocks it out) and whose second runs an L4 in us-east1: the task leaves rung 1 for a
  stockout and its job succeeds on rung 2.

A trigger that fires right after its task deferred can lose the task to an Airflow scheduler race
(apache/airflow#67287: the executor's success event of the deferring try, processed after the task
was queued again, fails it): the study's trials take seconds, not a fraction of one, and the task
retries (a retry attaches to the same job).
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone

from airflow.sdk import DAG, Param

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.operators.tuning import VertexTuningOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, ReductionServer, WorkerPool

PY = sys.executable
START = datetime(2024, 1, 1, tzinfo=timezone.utc)
EPOCH_LINE = "workerpool0-0: epoch 1 done, loss 0.4321"

# No Jinja braces in the code: the spec is templated.
LAYOUT_CODE = """
import json, os, time
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
key = "%s-%d" % (task["type"], task["index"])
print("%s: data loaded" % key, flush=True)
deadline = time.time() + 900
def wait_for(path):
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.2)
if key != "workerpool0-0":
    time.sleep(900)
wait_for(os.environ["GO_FILE"])
print("%EPOCH_LINE%", flush=True)
wait_for(os.environ["DONE_FILE"])
""".replace("%EPOCH_LINE%", EPOCH_LINE)

primary = WorkerPool(
    machine=Machine(machine_type="n1-highmem-96", accelerator_type="NVIDIA_TESLA_V100", accelerator_count=8),
    container=Container(
        image_uri="us-docker.pkg.dev/my-project/train/trainer:latest",
        command=(PY, "-c", LAYOUT_CODE),
        env={"GO_FILE": "{{ params.go_file }}", "DONE_FILE": "{{ params.done_file }}"},
    ),
)
LAYOUT_SPEC = DistributedTrainingJob(
    display_name="bert-finetune",
    primary=primary,
    workers=WorkerPool.like(primary, replica_count=4),
    reduction_server=ReductionServer(replica_count="auto"),
    base_output_directory="gs://my-bucket/bert/ui",
)

with DAG(
    "ui_layout",
    schedule=None,
    start_date=START,
    default_args={"retries": 0},
    params={"go_file": Param("", type="string"), "done_file": Param("", type="string")},
) as dag:
    VertexTrainingOperator(task_id="train", spec=LAYOUT_SPEC, deferrable=True, poll_interval=1.0)
ui_layout = dag

STUDY_CODE = (
    "import sys, time, hypertune\n"
    "x = int(sys.argv[-1].split('=')[1])\n"
    "h = hypertune.HyperTune()\n"
    "for step in (1, 2, 3):\n"
    "    time.sleep(1)\n"
    "    h.report_hyperparameter_tuning_metric(hyperparameter_metric_tag='score',"
    " metric_value=x * step / (1 + (x - 4) ** 2), global_step=step)\n"
    "print('trial x=%d reported' % x, flush=True)\n"
)
STUDY_SPEC = {
    "display_name": "ui-study",
    "trial_job": {
        "display_name": "ui-study-trial",
        "primary": {
            "machine": {"machine_type": "n1-standard-4"},
            "container": {"image_uri": "python:3.11", "command": [PY, "-c", STUDY_CODE]},
        },
    },
    "study": {
        "metrics": [{"metric_id": "score", "goal": "MAXIMIZE"}],
        "parameters": [{"type": "integer", "parameter_id": "x", "min_value": 1, "max_value": 6}],
        "algorithm": "GRID_SEARCH",
    },
    "max_trial_count": 6,
    "parallel_trial_count": 3,
}

with DAG(
    "ui_study",
    schedule=None,
    start_date=START,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=1)},
) as dag:
    VertexTuningOperator(task_id="tune", spec=STUDY_SPEC, deferrable=True, poll_interval=1.0)
ui_study = dag

LADDER_SPEC = {
    "display_name": "ui-ladder",
    "primary": {
        "machine": {
            "machine_type": "a2-highgpu-1g",
            "accelerator_type": "NVIDIA_TESLA_A100",
            "accelerator_count": 1,
        },
        "container": {"image_uri": "python:3.11", "command": [PY, "-c", "print('trained', flush=True)"]},
    },
}
LADDER = {
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

with DAG("ui_ladder", schedule=None, start_date=START, default_args={"retries": 0}) as dag:
    VertexTrainingOperator(
        task_id="train", spec=LADDER_SPEC, capacity=LADDER, deferrable=True, poll_interval=1.0
    )
ui_ladder = dag
