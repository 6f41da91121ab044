"""A DAG file importing the operators, sensors and specs loads no google.cloud module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

DAG_FILE = textwrap.dedent(
    """
    from datetime import datetime

    from airflow.sdk import DAG

    from airflow_vertex_dist.operators import (
        VertexCancelJobOperator,
        VertexTrainingOperator,
        VertexTuningOperator,
    )
    from airflow_vertex_dist.sensors import VertexJobSensor, VertexReplicaSensor, VertexTrialSensor
    from airflow_vertex_dist.specs import DistributedTrainingJob
    from airflow_vertex_dist.specs.examples import TUNING_EXAMPLE

    assert isinstance(TUNING_EXAMPLE.trial_job, DistributedTrainingJob)

    with DAG("parse_only", schedule=None, start_date=datetime(2024, 1, 1)) as dag:
        train = VertexTrainingOperator(task_id="train", spec=TUNING_EXAMPLE.trial_job, deferrable=True)
        tune = VertexTuningOperator(task_id="tune", spec=TUNING_EXAMPLE)
        name = "{{ ti.xcom_pull('train')['name'] }}"
        VertexJobSensor(task_id="job", job_name=name)
        VertexReplicaSensor(task_id="replicas", job_name=name, replicas=["workerpool1-*"])
        VertexTrialSensor(task_id="trials", job_name="{{ ti.xcom_pull('tune')['name'] }}", min_succeeded=2)
        VertexCancelJobOperator(task_id="cancel", job_name=name)
    """
)

PROBE = textwrap.dedent(
    """
    import json, runpy, sys
    dag = runpy.run_path(sys.argv[1])["dag"]
    # The bare ``google.cloud`` namespace package is created at interpreter start by the
    # google-cloud-aiplatform nspkg .pth file, before any import: it holds no code. Anything below
    # it (or google.api_core, grpc) would be a real load.
    loaded = sorted(
        m for m in sys.modules
        if m.startswith(("google.cloud.", "google.api_core", "google.auth", "grpc")) or m == "grpc"
    )
    print(json.dumps(loaded))
    print(json.dumps({t.task_id: getattr(t, "deferrable", False) for t in dag.tasks}))
    """
)


def test_a_dag_file_loads_no_google_cloud_module(tmp_path: Path) -> None:
    """Also: ``deferrable`` defaults to ``[operators] default_deferrable`` (set here through the env)."""
    dag_file = tmp_path / "parse_only.py"
    dag_file.write_text(DAG_FILE)
    env = {**os.environ, "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(dag_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded_line, deferrable_line = result.stdout.strip().splitlines()[-2:]
    assert json.loads(loaded_line) == []
    assert json.loads(deferrable_line) == {
        "train": True,
        "tune": True,
        "job": True,
        "replicas": True,
        "trials": True,
        "cancel": False,  # the cancel operator does not wait in the triggerer
    }
