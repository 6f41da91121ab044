"""``dags/tpu_training.py`` end to end against the emulator: a TPU v6e job (machine type, topology, no
accelerator named) is accepted, its replica runs on the host as any replica does, and the model's
metrics come back; a topology the machine type does not take fails the DAG file's parse."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from operators.harness import dag_xcom, run_dag, ti_state
from pydantic import ValidationError

from airflow_vertex_dist.specs import Machine
from vertex_emulator.app import Emulator

pytestmark = pytest.mark.slow

PARENT = "projects/test-project/locations/us-central1"
WHEN = datetime(2026, 11, 24, tzinfo=timezone.utc)


def test_the_tpu_job_runs_on_the_emulator(examples: Emulator, load_dags: Any) -> None:
    dag = load_dags("tpu_training.py")["vertex_dist_tpu_training"]
    dr = run_dag(dag, logical_date=WHEN)
    assert ti_state(dr, "train") == "success" and ti_state(dr, "report") == "success"
    [job] = examples.store.list("customJobs", PARENT)
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    [pool] = job["jobSpec"]["workerPoolSpecs"]
    assert pool["machineSpec"] == {"machineType": "ct6e-standard-8t", "tpuTopology": "2x4"}
    metrics = dag_xcom(dr, "report")
    assert metrics["steps"] and 0.0 <= metrics["accuracy"] <= 1.0


def test_a_topology_the_machine_type_does_not_take_fails_at_parse_time() -> None:
    with pytest.raises(ValidationError, match=r"tpu_topology: ct6e-standard-8t takes the topologies 2x4"):
        Machine(machine_type="ct6e-standard-8t", tpu_topology="4x4")
