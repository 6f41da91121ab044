"""The PyTorch DDP trainer in the seed-like Reduction Server layout on the emulator: 3 real gloo ranks
and idle reducers. Skipped only when torch is not installed.

(One run costs ~8 s of CPU per rank, mostly importing torch and the torch._dynamo that DDP's
constructor imports, so a lone-rank run is left to the PS trainer's single-replica test.)"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import trainer_harness as h
from trainers.data import load
from trainers.local import DDP_TRAINER_IMAGE

from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, ReductionServer, WorkerPool

torch = pytest.importorskip("torch", reason="torch is not installed: pip install --group examples")

pytestmark = pytest.mark.slow

EPOCHS = 3
ARGS = (f"--epochs={EPOCHS}", "--rows=1500", "--seed=5", "--learning_rate=0.1")


def reload_accuracy(model_dir: Path) -> float:
    """Load model.pt into a fresh model and score it on the evaluation rows."""
    from trainers.ddp_trainer import build_model

    meta = json.loads((model_dir / "model.json").read_text())
    model = build_model(meta["width"], meta["hidden"])
    model.load_state_dict(torch.load(model_dir / meta["state_dict"], weights_only=True))
    _, evaluation = load(None, rows=1500, features=8, seed=5)
    with torch.no_grad():
        logits = model(torch.tensor(evaluation.features, dtype=torch.float32)).squeeze(1)
    labels = torch.tensor(evaluation.labels, dtype=torch.float32)
    return float(((logits >= 0).float() == labels).float().mean())


def check_learned(metrics: dict[str, Any]) -> None:
    assert metrics["accuracy"] > 0.85, metrics
    assert metrics["log_loss"] < 0.4 < math.log(2), metrics
    assert len(metrics["history"]) == EPOCHS


def test_seed_like_reduction_server_layout(tmp_path: Path) -> None:
    """Primary + 2 workers (n1-highmem-96, 8 x V100) and auto-sized reducers: ceil(300 / 32) = 10."""
    primary = WorkerPool(
        machine=Machine(
            machine_type="n1-highmem-96", accelerator_type="NVIDIA_TESLA_V100", accelerator_count=8
        ),
        container=Container(image_uri=DDP_TRAINER_IMAGE, args=ARGS),
    )
    job = DistributedTrainingJob(
        display_name="ddp-reduction-server",
        primary=primary,
        workers=WorkerPool.like(primary, replica_count=2),
        reduction_server=ReductionServer(replica_count="auto"),
        base_output_directory="gs://bkt/ddp",
    )
    body = job.to_api()
    assert body["jobSpec"]["workerPoolSpecs"][2]["replicaCount"] == 10
    with h.emulator_and_client(tmp_path) as (em, client):
        name = h.submit(client, body)
        h.finish(em, name, timeout=150)
        logs = h.job_logs(em, name)
    model_dir = em.config.gcs_root / "bkt" / "ddp" / "model"
    metrics = json.loads((model_dir / "metrics.json").read_text())
    check_learned(metrics)
    assert metrics["ddp"] == {
        "backend": "gloo",
        "world_size": 3,
        "bucket_cap_mb": 64,
        "bucket_bytes_cap": 64 * 1024 * 1024,
        "reduction_server_replicas": 10,
    }
    assert reload_accuracy(model_dir) == pytest.approx(metrics["accuracy"])
    for rank, key in enumerate(("workerpool0-0", "workerpool1-0", "workerpool1-1")):
        assert (
            f"{key} is rank {rank} of 3 (gloo, rendezvous tcp://127.0.0.1:"
            in (logs / f"{key}.log").read_text()
        )
    for i in range(10):
        assert "performs no reduction" in (logs / f"workerpool2-{i}.log").read_text()
    lines = h.metric_lines(logs / "hypertune" / "workerpool0-0.metrics")
    assert len(lines) == EPOCHS and float(lines[-1]["accuracy"]) == pytest.approx(metrics["accuracy"])
    assert lines[-1]["global_step"] == str(metrics["steps"])
    # only rank 0 reports
    assert not (logs / "hypertune" / "workerpool1-0.metrics").exists()
