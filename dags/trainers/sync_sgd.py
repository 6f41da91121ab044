"""The trainers of the parameter-server example (the primary and the workers): synchronous SGD over
the weight shards the parameter servers (or the primary) hold, checkpoints after each epoch, and the
primary's model and metrics at the end. ``trainers.ps_trainer`` describes the whole cluster."""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainers import gcs
from trainers.checkpoints import Checkpoint, CheckpointError, checkpoint_dir, is_final, latest_checkpoint
from trainers.cluster import ClusterSpec
from trainers.data import Dataset, DatasetError, load
from trainers.linear import evaluate, gradient, size_for
from trainers.metrics import report_metric
from trainers.ps import ShardClient, ShardServer, shard_bounds, wait_closed

__all__ = ["local_data_dir", "run_trainer"]

log = logging.getLogger("trainers.ps_trainer")


def local_data_dir(args: argparse.Namespace) -> str | None:
    """``--data-dir`` as a local directory (a ``gs://`` one is downloaded to ./data first)."""
    return str(gcs.fetch_dir(args.data_dir, Path("data"))) if args.data_dir else None


def _batches(shard: Dataset, batch_size: int, steps: int, epoch: int) -> list[tuple[list[Any], list[int]]]:
    out = []
    n = len(shard)
    for s in range(steps):
        start = (epoch * steps + s) * batch_size
        idx = [(start + j) % n for j in range(batch_size)]
        out.append(([shard.features[i] for i in idx], [shard.labels[i] for i in idx]))
    return out


@dataclass
class _Trainer:
    """One trainer's run: its place in the cluster, its data, where it resumes and its shard clients."""

    spec: ClusterSpec
    args: argparse.Namespace
    rank: int
    world: int
    train: Dataset
    evaluation: Dataset
    ckpt_dir: str | None
    resume: Checkpoint | None
    clients: list[ShardClient]
    bounds: list[tuple[int, int]]
    own_server: ShardServer | None

    @property
    def start_step(self) -> int:
        return self.resume.step if self.resume is not None else 0


def _resume_point(args: argparse.Namespace, ckpt_dir: str | None, size: int, width: int) -> Checkpoint | None:
    # With --resume every trainer (the workers too: synchronous SGD needs them to agree on the step
    # numbers) resumes from the newest checkpoint when it starts, and they all read the same one: the
    # primary writes a checkpoint only after the last step of an epoch, and a step ends only once every
    # trainer has sent its gradient for it, which a trainer does only after this read. So no checkpoint
    # of this run can appear before every trainer has read the directory (and no earlier run writes any
    # more: a restarted or retried job starts once the replicas before it have stopped).
    resume = latest_checkpoint(ckpt_dir) if args.resume else None
    if resume is not None and len(resume.weights) != size:
        raise CheckpointError(
            f"{resume.name}: {len(resume.weights)} weights, the model has {size} ({width} features)"
        )
    return resume


def _start_trainer(spec: ClusterSpec, args: argparse.Namespace) -> _Trainer:
    rank = spec.trainer_rank
    assert rank is not None
    world = len(spec.trainers)
    train, evaluation = load(
        local_data_dir(args),
        rows=args.rows,
        features=args.features,
        seed=args.seed,
        eval_fraction=args.eval_fraction,
    )
    size = size_for(train.width)
    ckpt_dir = checkpoint_dir(args)
    resume = _resume_point(args, ckpt_dir, size, train.width)
    shards = spec.parameter_servers
    own_server: ShardServer | None = None
    if not shards:  # the primary holds the weights and serves them at its own address
        shards = (spec.primary_address,)
        if rank == 0:
            own_server = ShardServer(spec.address, world, timeout=args.step_timeout, name=spec.key).start()
    clients = [
        ShardClient(a, connect_timeout=args.connect_timeout, timeout=args.step_timeout + 30) for a in shards
    ]
    log.info(
        "%s is trainer %d of %d; %d train rows (%d on this shard), weights on %s",
        spec.key, rank, world, len(train), len(train.shard(rank, world)), ", ".join(shards),
    )  # fmt: skip
    bounds = shard_bounds(size, len(shards))
    return _Trainer(spec, args, rank, world, train, evaluation, ckpt_dir, resume, clients, bounds, own_server)


def _log_resume(resume: Checkpoint, steps_per_epoch: int, epochs: int) -> None:
    log.info("resuming from %s (epoch %d, step %d)", resume.name, resume.epoch, resume.step)
    if resume.step != resume.epoch * steps_per_epoch:
        log.warning(
            "%s: step %d is not %d epochs of %d steps (another batch size, dataset or cluster?); "
            "counting on from step %d", resume.name, resume.step, resume.epoch, steps_per_epoch,
            resume.step,
        )  # fmt: skip
    if is_final(resume.epoch, epochs):
        log.info("training is done: %s is at epoch %d of --epochs %d", resume.name, resume.epoch, epochs)


def _initial_weights(t: _Trainer) -> list[float]:
    """The weights every trainer starts from: the primary sets the shards (from the checkpoint it
    resumes from, else zeros), then every trainer pulls them."""
    if t.rank == 0:
        initial = list(t.resume.weights) if t.resume is not None else [0.0] * size_for(t.train.width)
        for client, (lo, hi) in zip(t.clients, t.bounds, strict=True):
            client.init(initial[lo:hi], t.start_step)
    return [v for c in t.clients for v in c.pull()]


def _epoch_done(t: _Trainer, epoch: int, step: int, weights: list[float]) -> dict[str, Any]:
    """The primary's end of an epoch: its scores, its metric report and its checkpoint."""
    args = t.args
    scores = evaluate(weights, t.evaluation)
    log.info("epoch %d step %d: %s", epoch + 1, step, scores)
    final = is_final(epoch + 1, args.epochs)
    report_metric(args.metric_id, scores[args.metric], step)
    if t.ckpt_dir is not None:
        gcs.write_json(
            gcs.join(t.ckpt_dir, f"ckpt-{step:08d}.json"),
            {"step": step, "epoch": epoch + 1, "weights": weights, "columns": list(t.train.columns),
             "final": final},
        )  # fmt: skip
    return {"epoch": epoch + 1, "step": step, **scores}


def _train_epochs(
    t: _Trainer, weights: list[float], steps_per_epoch: int
) -> tuple[list[float], int, list[Any]]:
    """Synchronous SGD from the resume point to ``--epochs``: the final weights, the step reached and
    the epochs this run trained (the primary's scores of each)."""
    args = t.args
    start_epoch = t.resume.epoch if t.resume is not None else 0
    mine = t.train.shard(t.rank, t.world)
    if not len(mine):
        raise DatasetError(f"trainer {t.rank} has no rows: {len(t.train)} train rows for {t.world} trainers")
    step = t.start_step
    history: list[dict[str, Any]] = []  # the epochs this run trained
    for epoch in range(start_epoch, args.epochs):
        began = time.monotonic()
        for xs, ys in _batches(mine, args.batch_size, steps_per_epoch, epoch):
            grad = gradient(weights, xs, ys, args.l2)
            weights = []
            for client, (lo, hi) in zip(t.clients, t.bounds, strict=True):
                weights.extend(client.step(t.rank, step, grad[lo:hi], args.learning_rate))
            step += 1
        time.sleep(max(0.0, getattr(args, "epoch_seconds", 0.0) - (time.monotonic() - began)))  # the pace
        if t.rank == 0:
            history.append(_epoch_done(t, epoch, step, weights))
    return weights, step, history


def run_trainer(spec: ClusterSpec, args: argparse.Namespace) -> dict[str, Any]:
    t = _start_trainer(spec, args)
    # every trainer runs the same number of steps (synchronous SGD): enough for the largest shard
    steps_per_epoch = max(1, math.ceil(math.ceil(len(t.train) / t.world) / args.batch_size))
    if t.resume is not None:
        _log_resume(t.resume, steps_per_epoch, args.epochs)
    weights = _initial_weights(t)
    started = time.monotonic()
    weights, step, history = _train_epochs(t, weights, steps_per_epoch)
    elapsed = time.monotonic() - started
    if t.rank != 0:
        for client in t.clients:
            client.close()
        run = step - t.start_step
        log.info("%s finished at step %d (%d this run) in %.2fs", spec.key, step, run, elapsed)
        return {"role": "worker", "rank": t.rank, "steps": step, "steps_run": run}
    return _finish_primary(t, weights, step, history, elapsed)


def _finish_primary(
    t: _Trainer, weights: list[float], step: int, history: list[Any], elapsed: float
) -> dict[str, Any]:
    """The primary's end of training: the final scores, the evaluator's, the parameter servers'
    counts, then the model and its metrics written to the model directory."""
    spec, args, train, resume = t.spec, t.args, t.train, t.resume
    scores = evaluate(weights, t.evaluation)
    if not history:  # done already (resumed from the final checkpoint): report the model's metric once
        report_metric(args.metric_id, scores[args.metric], step)
    evaluator = _wait_for_evaluator(spec, t.ckpt_dir, step, args.eval_timeout)
    model_dir = args.model_dir or os.environ.get("AIP_MODEL_DIR") or "model"
    model = {
        "kind": "logistic_regression",
        "columns": list(train.columns),
        "weights": weights[:-1],
        "bias": weights[-1],
        "steps": step,
        "hyperparameters": {
            "learning_rate": args.learning_rate, "epochs": args.epochs, "batch_size": args.batch_size,
            "l2": args.l2,
        },
        "cluster": {"trainers": t.world, "parameter_servers": len(spec.parameter_servers)},
    }  # fmt: skip
    metrics = {
        **scores,
        "metric_id": args.metric_id,
        "metric": args.metric,
        "value": scores[args.metric],
        "train_rows": len(train),
        "eval_rows": len(t.evaluation),
        "steps": step,
        "steps_run": step - t.start_step,
        "resumed_from": (
            None
            if resume is None
            else {"checkpoint": resume.name, "epoch": resume.epoch, "step": resume.step}
        ),
        "seconds": round(elapsed, 3),
        "history": history,
        "evaluator": evaluator,
        "trial": spec.trial,
    }
    metrics["parameter_servers"] = _close_shards(t)
    gcs.write_json(gcs.join(model_dir, "model.json"), model)
    gcs.write_json(gcs.join(model_dir, "metrics.json"), metrics)
    log.info("model written to %s; %s = %.4f", model_dir, args.metric_id, scores[args.metric])
    if t.own_server is not None:
        t.own_server.stop(wait_for_peers=10.0)
    return {"role": "primary", "model_dir": model_dir, **scores}


def _close_shards(t: _Trainer) -> list[dict[str, Any]]:
    """Close the shard clients (each parameter server's own count of the steps it applied first), then
    let the parameter servers exit on their own before the job ends."""
    servers = []
    for client in t.clients:
        if t.spec.parameter_servers:  # each server's own count of the steps it applied
            reply = client.done()
            servers.append(
                {"address": client.address, "steps": reply["version"], "applied": reply["applied"],
                 "size": reply["size"]}
            )  # fmt: skip
        client.close()
    for address in t.spec.parameter_servers:  # let them exit on their own before the job ends
        if not wait_closed(address, 10.0):
            log.warning("parameter server %s still listens 10s after done", address)
    return servers


def _wait_for_evaluator(
    spec: ClusterSpec, ckpt_dir: str | None, step: int, timeout: float
) -> dict[str, Any] | None:
    """The evaluator's score of the final checkpoint, when the job has an evaluator (else None)."""
    if not spec.addresses(3) or ckpt_dir is None:
        return None
    uri = gcs.join(ckpt_dir, f"eval-{step:08d}.json")
    deadline = time.monotonic() + timeout
    while not gcs.exists(uri):
        if time.monotonic() > deadline:
            log.warning("no evaluation of the final checkpoint after %gs (%s)", timeout, uri)
            return None
        time.sleep(0.1)
    result: dict[str, Any] = json.loads(gcs.read_text(uri))
    return result
