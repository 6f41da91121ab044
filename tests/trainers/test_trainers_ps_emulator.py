"""The parameter-server trainer as real replica processes on the emulator: full PS layout, primary
with workers and no parameter servers, a lone primary from a python package sdist, a tuning study, a
Spot preemption after which the restarted job resumes from its checkpoint."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import trainer_harness as h
from trainers import linear
from trainers.data import load
from trainers.local import PREP_IMAGE, PS_TRAINER_IMAGE, build_sdist
from trainers.ps import shard_bounds
from trainers.sync_sgd import _batches

from airflow_vertex_dist.specs import (
    Container,
    DiscreteParameter,
    DistributedTrainingJob,
    HyperparameterTuningJob,
    Machine,
    Metric,
    PythonPackage,
    Scheduling,
    Study,
    WorkerPool,
)
from tests.emulator_suite import admin
from tests.polling import poll_until
from vertex_emulator.core.config import Capacity

pytestmark = pytest.mark.slow

EPOCHS = 4
ARGS = ("--learning_rate=0.5", f"--epochs={EPOCHS}", "--batch_size=32", "--rows=1500", "--seed=7")


def pool(count: int = 1, args: tuple[str, ...] = ARGS) -> WorkerPool:
    return WorkerPool(
        machine=Machine(machine_type="n1-standard-4"),
        replica_count=count,
        container=Container(image_uri=PS_TRAINER_IMAGE, args=args),
    )


def reference_weights(
    *, trainers: int, shards: int, lr: float, epochs: int, rows: int, seed: int
) -> list[float]:
    """Synchronous SGD computed in one process, with the servers' arithmetic (rank-order means)."""
    train, _ = load(None, rows=rows, features=8, seed=seed)
    weights = [0.0] * linear.size_for(train.width)
    bounds = shard_bounds(len(weights), shards)
    steps = max(1, math.ceil(math.ceil(len(train) / trainers) / 32))
    for epoch in range(epochs):
        batches = [_batches(train.shard(r, trainers), 32, steps, epoch) for r in range(trainers)]
        for s in range(steps):
            grads = [linear.gradient(weights, *batches[r][s]) for r in range(trainers)]
            new: list[float] = []
            for lo, hi in bounds:
                shard = weights[lo:hi]
                for i in range(hi - lo):
                    total = 0.0
                    for g in grads:
                        total += g[lo + i]
                    shard[i] -= lr * (total / trainers)
                new.extend(shard)
            weights = new
    return weights


def check_learned(metrics: dict[str, Any]) -> None:
    """It learned: accurate, and the held-out log loss fell from the untrained ln 2."""
    assert metrics["accuracy"] > 0.85, metrics
    assert metrics["log_loss"] < 0.4 < math.log(2), metrics
    losses = [h["log_loss"] for h in metrics["history"]]
    assert len(losses) == EPOCHS and losses[-1] < losses[0], losses


def test_parameter_server_layout(tmp_path: Path) -> None:
    """1 primary + 2 workers + 2 parameter servers + 1 evaluator, all really exchanging over TCP."""
    job = DistributedTrainingJob(
        display_name="ps-layout",
        primary=pool(),
        workers=pool(2),
        parameter_servers=pool(2),
        evaluators=pool(1),
        base_output_directory="gs://bkt/ps-run",
    )
    with h.emulator_and_client(tmp_path) as (em, client):
        name = h.submit(client, job.to_api())
        h.finish(em, name)
        logs = h.job_logs(em, name)
    out = em.config.gcs_root / "bkt" / "ps-run"
    model = json.loads((out / "model" / "model.json").read_text())
    metrics = json.loads((out / "model" / "metrics.json").read_text())
    check_learned(metrics)
    steps = metrics["steps"]
    assert model["cluster"] == {"trainers": 3, "parameter_servers": 2}
    assert model["hyperparameters"]["learning_rate"] == 0.5 and model["steps"] == steps
    # exactly the synchronous-SGD result: every trainer's gradient went through both servers
    expected = reference_weights(trainers=3, shards=2, lr=0.5, epochs=EPOCHS, rows=1500, seed=7)
    assert [*model["weights"], model["bias"]] == expected
    # both servers applied every step, each to its half of the 9 parameters
    assert [(s["steps"], s["size"]) for s in metrics["parameter_servers"]] == [(steps, 4), (steps, 5)]
    for ps in ("workerpool2-0", "workerpool2-1"):  # they served, then stopped when the primary said done
        text = (logs / f"{ps}.log").read_text()
        assert (
            f"{ps} serving a weight shard at 127.0.0.1:" in text and f"{ps} done after {steps} steps" in text
        )
    # the evaluator scored every checkpoint; its score of the final one is the primary's
    ckpts = sorted(p.name for p in (out / "checkpoints").glob("ckpt-*.json"))
    evals = sorted(p.name for p in (out / "checkpoints").glob("eval-*.json"))
    assert len(ckpts) == len(evals) == EPOCHS
    assert metrics["evaluator"]["evaluator"] == "workerpool3-0"
    assert metrics["evaluator"]["step"] == steps
    assert metrics["evaluator"]["accuracy"] == metrics["accuracy"]
    # the hypertune file of the primary: one line per epoch, the library's format
    lines = h.metric_lines(logs / "hypertune" / "workerpool0-0.metrics")
    assert len(lines) == EPOCHS
    assert set(lines[-1]) == {"timestamp", "trial", "accuracy", "global_step", "checkpoint_path"}
    assert lines[-1]["accuracy"] == str(metrics["accuracy"]) and lines[-1]["global_step"] == str(steps)
    assert lines[-1]["trial"] == "0"


def test_prep_job_then_primary_holding_the_weights(tmp_path: Path) -> None:
    """A prep job writes JSONL under gs://; then primary + 1 worker and no PS train on it: the worker
    pulls and pushes at the primary's own address."""
    data_uri = "gs://bkt/data/2026-11-23"
    prep = DistributedTrainingJob(
        display_name="prep",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(
                image_uri=PREP_IMAGE,
                args=(f"--out-dir={data_uri}", "--rows=1200", "--seed=11", "--format=jsonl"),
            ),
        ),
        base_output_directory="gs://bkt/prep-run",
    )
    args = (f"--data-dir={data_uri}", f"--epochs={EPOCHS}", "--metric-id=logloss", "--metric=log_loss")
    train = DistributedTrainingJob(
        display_name="no-ps",
        primary=pool(args=args),
        workers=pool(1, args=args),
        base_output_directory="gs://bkt/no-ps",
    )
    with h.emulator_and_client(tmp_path) as (em, client):
        h.finish(em, h.submit(client, prep.to_api()))
        data = em.config.gcs_root / "bkt" / "data" / "2026-11-23"
        manifest = json.loads((data / "dataset.json").read_text())
        assert manifest["train_rows"] == 960 and manifest["format"] == "jsonl" and manifest["seed"] == 11
        assert (data / "train.jsonl").is_file() and (data / "eval.jsonl").is_file()
        name = h.submit(client, train.to_api())
        h.finish(em, name)
        logs = h.job_logs(em, name)
    metrics = json.loads((em.config.gcs_root / "bkt" / "no-ps" / "model" / "metrics.json").read_text())
    check_learned(metrics)
    assert metrics["train_rows"] == 960 and metrics["eval_rows"] == 240
    assert metrics["value"] == metrics["log_loss"] and metrics["evaluator"] is None
    assert metrics["parameter_servers"] == []
    primary = json.loads((logs / "replicas.json").read_text())["workerpool0-0"]["address"]
    assert f"weights on {primary}" in (logs / "workerpool1-0.log").read_text()
    line = h.metric_lines(logs / "hypertune" / "workerpool0-0.metrics")[-1]
    assert float(line["logloss"]) == metrics["log_loss"]


def test_lone_primary_from_a_python_package_sdist(tmp_path: Path) -> None:
    """One replica shipped as a python package spec: an sdist under gs://, installed by the emulator."""
    with h.emulator_and_client(tmp_path) as (em, client):
        sdist = build_sdist(em.config.gcs_root / "bkt" / "packages")
        assert build_sdist(tmp_path / "again").read_bytes() == sdist.read_bytes()  # deterministic
        job = DistributedTrainingJob(
            display_name="lone-primary",
            primary=WorkerPool(
                machine=Machine(machine_type="n1-standard-4"),
                python_package=PythonPackage(
                    executor_image_uri="us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest",
                    package_uris=(f"gs://bkt/packages/{sdist.name}",),
                    python_module="trainers.ps_trainer",
                    args=ARGS,
                ),
            ),
            base_output_directory="gs://bkt/lone",
        )
        name = h.submit(client, job.to_api())
        h.finish(em, name, timeout=120)
        logs = h.job_logs(em, name)
    metrics = json.loads((em.config.gcs_root / "bkt" / "lone" / "model" / "metrics.json").read_text())
    check_learned(metrics)
    model = json.loads((em.config.gcs_root / "bkt" / "lone" / "model" / "model.json").read_text())
    assert model["cluster"] == {"trainers": 1, "parameter_servers": 0}
    assert [*model["weights"], model["bias"]] == reference_weights(
        trainers=1, shards=1, lr=0.5, epochs=EPOCHS, rows=1500, seed=7
    )
    # it ran from the package the emulator installed from the sdist, not from this checkout
    installed = em.config.state_dir / "packages" / name.rsplit("/", 1)[-1] / "workerpool0" / "trainers"
    assert (
        f"ps_trainer (from {installed}) starting as workerpool0-0" in (logs / "workerpool0-0.log").read_text()
    )


def test_tuning_study_over_the_learning_rate(tmp_path: Path) -> None:
    """A grid study of 3 trials, each a primary + 1 parameter server; the metric comes from hypertune."""
    rates = (0.01, 0.5, 2.0)
    tuning = HyperparameterTuningJob(
        display_name="ps-tuning",
        trial_job=DistributedTrainingJob(
            display_name="ps-trial",
            primary=pool(args=(f"--epochs={EPOCHS}", "--rows=1500", "--seed=7")),
            parameter_servers=pool(1, args=(f"--epochs={EPOCHS}",)),
            base_output_directory="gs://bkt/study",
        ),
        study=Study(
            metrics=(Metric(metric_id="accuracy", goal="MAXIMIZE"),),
            parameters=(DiscreteParameter(parameter_id="learning_rate", values=rates),),
            algorithm="GRID_SEARCH",
        ),
        max_trial_count=3,
        parallel_trial_count=2,
    )
    with h.emulator_and_client(tmp_path) as (em, client):
        name = h.submit(client, tuning.to_api())
        job = h.finish(em, name, timeout=120)
    trials = job["trials"]
    assert [t["state"] for t in trials] == ["SUCCEEDED"] * 3
    seen = {}
    for trial in trials:
        rate = float(trial["parameters"][0]["value"])
        metric = trial["finalMeasurement"]["metrics"][0]
        assert metric["metricId"] == "accuracy"
        out = em.config.gcs_root / "bkt" / "study" / trial["id"] / "model"
        metrics = json.loads((out / "metrics.json").read_text())
        hyper = json.loads((out / "model.json").read_text())["hyperparameters"]
        assert hyper["learning_rate"] == rate and metrics["trial"] == trial["id"]
        assert metric["value"] == pytest.approx(metrics["accuracy"])
        seen[rate] = metrics["accuracy"]
    assert sorted(seen) == sorted(rates)
    assert max(seen.values()) > 0.85
    assert seen[0.01] < seen[0.5]  # a learning rate that is too small learns less in the same steps


# A worker running the example trainer, held the way a VM is taken back: on its first start it stops
# before its gradient for step HOLD_AT (the first step of epoch 3), so epoch 2's checkpoint is the
# newest until the test preempts the job; started again after the preemption (HOLD_FLAG exists), it
# runs as it is.
HOLD = """
import os, sys, time
from trainers import ps, ps_trainer
hold, at = not os.path.exists(os.environ["HOLD_FLAG"]), int(os.environ["HOLD_AT"])
step = ps.ShardClient.step
def held(self, rank, n, grad, lr):
    if hold and n == at:
        time.sleep(120)
        sys.exit("not preempted")
    return step(self, rank, n, grad, lr)
ps.ShardClient.step = held
sys.exit(ps_trainer.main(sys.argv[1:]))
"""


def test_a_preempted_spot_job_resumes_from_its_checkpoint_and_repeats_no_step(tmp_path: Path) -> None:
    """Primary + worker + 2 parameter servers + evaluator on Spot VMs, preempted after epoch 2: the
    emulator restarts the whole job (same AIP_CHECKPOINT_DIR), every replica resumes from epoch 2's
    checkpoint and the job trains epochs 3-4 only, ending with a fresh 4-epoch run's weights."""
    flag = tmp_path / "preempted"
    steps_per_epoch = math.ceil(math.ceil(1200 / 2) / 32)  # 1200 train rows, 2 trainers, batch 32
    at = 2 * steps_per_epoch
    worker = WorkerPool(
        machine=Machine(machine_type="n1-standard-4"),
        container=Container(
            image_uri="python:3.11",
            command=(sys.executable, "-c", HOLD),
            args=(*ARGS, "--resume"),
            env={"PYTHONPATH": str(h.DAGS_DIR), "HOLD_FLAG": str(flag), "HOLD_AT": str(at)},
        ),
    )
    job = DistributedTrainingJob(
        display_name="ps-spot",
        primary=pool(args=(*ARGS, "--resume")),
        workers=worker,
        parameter_servers=pool(2, args=(*ARGS, "--resume")),
        evaluators=pool(1, args=(*ARGS, "--resume")),
        base_output_directory="gs://bkt/spot",
        scheduling=Scheduling(strategy="SPOT"),
    )
    with h.emulator_and_client(tmp_path, capacity=Capacity(spot_notice_s=1.0)) as (em, client):
        ckpts = em.config.gcs_root / "bkt" / "spot" / "checkpoints"
        name = h.submit(client, job.to_api())
        poll_until(
            lambda: (ckpts / f"eval-{at:08d}.json").exists(), timeout=90, interval=0.05,
            what="epoch 2's checkpoint, scored",
        )  # fmt: skip
        first = files(ckpts)
        names = [f"{kind}-{s:08d}.json" for kind in ("ckpt", "eval") for s in (steps_per_epoch, at)]
        assert sorted(first) == names  # the worker holds epoch 3: nothing after epoch 2
        flag.touch()
        assert admin(em, "POST", "/emulator/capacity/preempt", {"job": name})[0] == 200
        h.finish(em, name, timeout=120)
        logs = h.job_logs(em, name)
    replicas = json.loads((logs / "replicas.json").read_text())
    assert {key: r["restarts"] for key, r in replicas.items()} == dict.fromkeys(replicas, 1)
    out = em.config.gcs_root / "bkt" / "spot"
    metrics = json.loads((out / "model" / "metrics.json").read_text())
    model = json.loads((out / "model" / "model.json").read_text())
    steps = EPOCHS * steps_per_epoch
    # the restarted job trained epochs 3 and 4 only, on from epoch 2's checkpoint
    assert metrics["resumed_from"] == {"checkpoint": f"ckpt-{at:08d}.json", "epoch": 2, "step": at}
    assert [(e["epoch"], e["step"]) for e in metrics["history"]] == [(3, at + steps_per_epoch), (4, steps)]
    assert metrics["steps"] == model["steps"] == steps and metrics["steps_run"] == steps - at
    # each parameter server started at step `at` and applied only the steps after it
    assert [(s["steps"], s["applied"]) for s in metrics["parameter_servers"]] == [(steps, steps - at)] * 2
    # the same weights as one uninterrupted 4-epoch run: no step repeated, none lost
    expected = reference_weights(trainers=2, shards=2, lr=0.5, epochs=EPOCHS, rows=1500, seed=7)
    assert [*model["weights"], model["bias"]] == expected
    # across both starts, the primary logged each epoch once
    primary = (logs / "workerpool0-0.log").read_text()
    epochs = [(int(e), int(s)) for e, s in re.findall(r"epoch (\d+) step (\d+):", primary)]
    assert epochs == [(e, e * steps_per_epoch) for e in range(1, EPOCHS + 1)]
    assert f"resuming from ckpt-{at:08d}.json (epoch 2, step {at})" in primary
    assert f"finished at step {steps} ({steps - at} this run)" in (logs / "workerpool1-0.log").read_text()
    # the evaluator scored epochs 1-2 before the preemption and did not score them again
    last = files(ckpts)
    assert {n: last[n] for n in first} == first
    assert sorted(last) == [
        f"{kind}-{e * steps_per_epoch:08d}.json" for kind in ("ckpt", "eval") for e in (1, 2, 3, 4)
    ]
    assert metrics["evaluator"]["step"] == steps and metrics["evaluator"]["accuracy"] == metrics["accuracy"]
    assert metrics["accuracy"] > 0.85 and metrics["log_loss"] < 0.4, metrics


def files(ckpts: Path) -> dict[str, tuple[int, int]]:
    """The checkpoints and scores in ``ckpts``: name -> (inode, mtime); a file written again changes."""
    return {
        p.name: (p.stat().st_ino, p.stat().st_mtime_ns)
        for pattern in ("ckpt-*.json", "eval-*.json")
        for p in ckpts.glob(pattern)
    }
