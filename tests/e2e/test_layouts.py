"""``dags/reduction_server.py`` and ``dags/parameter_server.py`` end to end: every pool of the layout
runs as real processes with the addresses and roles CLUSTER_SPEC gives them."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from operators.harness import alive, dag_xcom, run_dag, ti_state

from vertex_emulator.app import Emulator

pytestmark = pytest.mark.slow

PARENT = "projects/test-project/locations/us-central1"
WHEN = datetime(2026, 11, 24, tzinfo=timezone.utc)


def replicas(em: Emulator, job: dict[str, Any]) -> dict[str, Any]:
    job_id = job["name"].rsplit("/", 1)[1]
    data: dict[str, Any] = json.loads((em.config.state_dir / "logs" / job_id / "replicas.json").read_text())
    return data


def test_reduction_server_layout_trains_with_ddp(examples: Emulator, load_dags: Any) -> None:
    pytest.importorskip("torch")
    dag = load_dags("reduction_server.py")["vertex_dist_reduction_server"]
    dr = run_dag(dag, logical_date=WHEN)
    assert ti_state(dr, "train") == "success"

    [job] = examples.store.list("customJobs", PARENT)
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    pools = job["jobSpec"]["workerPoolSpecs"]
    assert [int(p["replicaCount"]) for p in pools] == [1, 4, 16]
    assert (
        pools[0]["machineSpec"]
        == pools[1]["machineSpec"]
        == {
            "machineType": "n1-highmem-96",
            "acceleratorType": "NVIDIA_TESLA_V100",
            "acceleratorCount": 8,
        }
    )
    assert pools[2]["machineSpec"] == {"machineType": "n1-highcpu-16"}
    image = pools[2]["containerSpec"]["imageUri"]
    assert image == "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"

    reps = replicas(examples, job)
    assert len(reps) == 21
    assert reps["workerpool0-0"]["exitCode"] == 0
    # the workers finish with the primary, or are stopped (SIGTERM) once it succeeded
    assert {reps[f"workerpool1-{i}"]["exitCode"] for i in range(4)} <= {0, 143}
    reducers = [r for k, r in reps.items() if k.startswith("workerpool2-")]
    assert len(reducers) == 16 and all(r["pid"] and not alive(r["pid"]) for r in reducers)

    model_dir = examples.config.gcs_root / "vertex-dist-examples" / "reduction_server" / "20261124" / "model"
    assert (model_dir / "model.pt").stat().st_size > 0
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["ddp"]["world_size"] == 5  # the reducers are not ranks
    assert metrics["ddp"]["backend"] == "gloo"
    assert metrics["ddp"]["bucket_cap_mb"] == 64
    assert metrics["ddp"]["reduction_server_replicas"] == 16
    assert metrics["accuracy"] > 0.6


def test_parameter_server_layout_with_evaluator(examples: Emulator, load_dags: Any) -> None:
    dag = load_dags("parameter_server.py")["vertex_dist_parameter_server"]
    dr = run_dag(dag, logical_date=WHEN)
    for task_id in ("train", "replicas_up", "finished", "report"):
        assert ti_state(dr, task_id) == "success", task_id

    [job] = examples.store.list("customJobs", PARENT)
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    assert [int(p["replicaCount"]) for p in job["jobSpec"]["workerPoolSpecs"]] == [1, 2, 2, 1]
    assert set(job["webAccessUris"]) == {
        "workerpool0-0", "workerpool1-0", "workerpool1-1", "workerpool2-0", "workerpool2-1", "workerpool3-0",
    }  # fmt: skip
    reps = replicas(examples, job)
    assert reps["workerpool0-0"]["exitCode"] == 0

    model_dir = examples.config.gcs_root / "vertex-dist-examples" / "parameter_server" / "20261124" / "model"
    model = json.loads((model_dir / "model.json").read_text())
    assert model["cluster"] == {"trainers": 3, "parameter_servers": 2}
    report = dag_xcom(dr, "report")
    assert report["accuracy"] > 0.7
    # the evaluator scored the final checkpoint the primary wrote
    assert report["evaluator"]["evaluator"] == "workerpool3-0"
    assert report["evaluator"]["step"] == report["steps"] == model["steps"]
    ckpts = model_dir.parent / "checkpoints"
    assert len(list(ckpts.glob("ckpt-*.json"))) == 4 == len(list(ckpts.glob("eval-*.json")))
    assert dag_xcom(dr, "finished")["state"] == "JOB_STATE_SUCCEEDED"
