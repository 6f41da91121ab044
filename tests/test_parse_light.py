"""A DAG file that builds our tasks loads neither the trigger machinery nor any Google client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from airflow_vertex_dist.operators import VertexCancelJobOperator, VertexTrainingOperator
from airflow_vertex_dist.operators import VertexTuningOperator
from airflow_vertex_dist.sensors import VertexJobSensor, VertexReplicaSensor, VertexTrialSensor
from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER, TUNING_EXAMPLE
VertexTrainingOperator(task_id="train", spec=SEED_REDUCTION_SERVER)
VertexTuningOperator(task_id="tune", spec=TUNING_EXAMPLE)
print(json.dumps(sorted(sys.modules)))
"""


def test_building_tasks_loads_no_trigger_and_no_client(tmp_path: Path) -> None:
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    modules = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    heavy = {
        "airflow_vertex_dist.triggers.jobs",
        "airflow_vertex_dist.triggers.poller",
        "airflow_vertex_dist.triggers.sensors",
        "airflow_vertex_dist.hooks._clients",
        "grpc",
    }
    assert not heavy & modules, sorted(heavy & modules)
    assert not [m for m in modules if m.startswith("google.cloud.")], "a google.cloud submodule was imported"
