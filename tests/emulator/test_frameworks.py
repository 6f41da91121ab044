"""Real distributed frameworks on the emulator, with nothing but the environment Vertex AI gives.

* PyTorch: ``init_process_group(init_method="env://")`` + ``all_reduce`` across 3 replicas (gloo), from
  ``MASTER_ADDR``/``MASTER_PORT``/``WORLD_SIZE``/``RANK``. torch is in the ``examples`` extra.
* TensorFlow: ``MultiWorkerMirroredStrategy`` from ``TF_CONFIG`` (chief + 1 worker); skipped when
  TensorFlow is not installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.cloud.aiplatform_v1 import CustomJob

from vertex_emulator import testing

pytestmark = pytest.mark.slow
PARENT = "projects/p/locations/us-central1"

TORCH_ALL_REDUCE = """
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank = dist.get_rank()
assert rank == int(os.environ["RANK"]) and dist.get_world_size() == 3
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"rank {rank} of {dist.get_world_size()}: sum {t.item():g}", flush=True)
assert t.item() == 6.0
dist.barrier()
dist.destroy_process_group()
"""

TF_MULTI_WORKER = """
import json, os
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
task = json.loads(os.environ["TF_CONFIG"])["task"]

def one():
    ctx = tf.distribute.get_replica_context()
    return ctx.all_reduce(tf.distribute.ReduceOp.SUM, tf.constant(1.0))

total = float(strategy.experimental_local_results(strategy.run(one))[0])
n = strategy.num_replicas_in_sync
print(f"{task['type']} {task['index']}: {n} replicas, sum {total:g}", flush=True)
assert n == 2 and total == 2.0
"""


def run_job(tmp_path: Path, code: str, workers: int, timeout: float) -> tuple[str, Path]:
    with testing.running_emulator(tmp_path, stop_grace_s=2.0) as em:
        client = testing.grpc_client(em)
        try:
            body = testing.container_job("framework", code, workers=workers)
            job = client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body)))
            ended = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}
            done = testing.wait_for_state(client, job.name, ended, timeout=timeout)
        finally:
            client.transport.close()
        logs = em.config.state_dir / "logs" / job.name.rsplit("/", 1)[1]
        assert done.state.name == "JOB_STATE_SUCCEEDED", done.error.message
        return job.name, logs


def test_torch_env_init_and_all_reduce_across_three_replicas(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is not installed: pip install --group examples")
    _, logs = run_job(tmp_path, TORCH_ALL_REDUCE, workers=2, timeout=180)
    for rank, key in enumerate(("workerpool0-0", "workerpool1-0", "workerpool1-1")):
        assert f"rank {rank} of 3: sum 6" in (logs / f"{key}.log").read_text()


def test_tensorflow_multi_worker_mirrored_strategy(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow", reason="TensorFlow is not installed")
    _, logs = run_job(tmp_path, TF_MULTI_WORKER, workers=1, timeout=300)
    assert "chief 0: 2 replicas, sum 2" in (logs / "workerpool0-0.log").read_text()
    assert "worker 0: 2 replicas, sum 2" in (logs / "workerpool1-0.log").read_text()
