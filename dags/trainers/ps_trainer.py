"""Parameter-server logistic regression for Vertex AI worker pools (standard library + google-cloud-storage).

Run it in every pool of a job, with the same arguments; each replica takes its role from CLUSTER_SPEC:

- parameter servers (workerpool2) each hold a contiguous shard of the weights and serve it over TCP
  at their CLUSTER_SPEC address (see trainers.ps), until the primary says it is done;
- the primary (workerpool0, rank 0) and the workers (workerpool1, ranks 1..n) each train on their
  shard of the rows (every n-th row): per step they compute the gradient of a mini-batch and push it
  to every server, which applies the mean of all trainers' gradients (synchronous SGD) and returns
  the new weights;
- without parameter servers the primary holds the weights itself and serves them at its own address;
  alone (no workers either) it trains by itself the same way;
- after every epoch the primary writes a checkpoint to ``AIP_CHECKPOINT_DIR`` (``ckpt-<step>.json``:
  epoch, step, weights); the evaluator (workerpool3) scores each checkpoint on the evaluation rows
  (``eval-<step>.json`` beside it; one scored before is not scored again) and exits once it has seen
  the final one (epoch ``--epochs`` or later), whose score the primary waits for;
- resume (``--resume``; without it a run trains from the start): every trainer starts from the
  newest checkpoint in ``AIP_CHECKPOINT_DIR`` (the same directory after a preemption restart or a
  capacity rung change): training continues after its epoch and step, from its weights; a checkpoint
  at ``--epochs`` or later means training is done, and the primary writes the model from it.
  ``metrics.json`` says where the run resumed from, which epochs it trained (``history``) and the step
  reached in total (``steps``);
- at the end the primary writes ``model.json`` and ``metrics.json`` to ``AIP_MODEL_DIR`` and reports
  the evaluation metric with cloudml-hypertune (``--metric-id``; ``--metric`` picks accuracy or
  log_loss), so the same code serves a hyperparameter tuning study.

Hyperparameters: ``--learning_rate``, ``--epochs``, ``--batch_size``, ``--l2``. Data: ``--data-dir``
(a prep step's CSV/JSONL directory, see trainers.data; ``gs://`` is read with google-cloud-storage,
trainers.gcs) or a synthetic dataset from ``--rows``/``--features``/``--seed``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainers import gcs
from trainers.cluster import ClusterSpec, ClusterSpecError
from trainers.data import Dataset, DatasetError, load
from trainers.linear import evaluate, gradient, size_for
from trainers.metrics import report_metric
from trainers.ps import PsError, ShardClient, ShardServer, shard_bounds, wait_closed

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "checkpoint_names",
    "is_final",
    "latest_checkpoint",
    "main",
    "parse_args",
    "read_checkpoint",
    "run",
]

log = logging.getLogger("trainers.ps_trainer")
METRICS = ("accuracy", "log_loss")
_CKPT_RE = re.compile(r"ckpt-(\d+)\.json")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m trainers.ps_trainer", description=__doc__.split("\n")[0])
    p.add_argument("--learning_rate", "--learning-rate", dest="learning_rate", type=float, default=0.5)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch_size", "--batch-size", dest="batch_size", type=int, default=32)
    p.add_argument("--l2", type=float, default=0.0)
    p.add_argument("--data-dir", "--data_dir", dest="data_dir", default=None)
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--features", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-fraction", dest="eval_fraction", type=float, default=0.2)
    p.add_argument("--metric-id", "--metric_id", dest="metric_id", default="accuracy")
    p.add_argument("--metric", choices=METRICS, default=None, help="default: --metric-id if it names one")
    p.add_argument("--model-dir", dest="model_dir", default=None, help="default: $AIP_MODEL_DIR or ./model")
    p.add_argument(
        "--checkpoint-dir", dest="checkpoint_dir", default=None, help="default: $AIP_CHECKPOINT_DIR"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest checkpoint in the checkpoint directory (after a Spot preemption, a "
        "retry or a capacity ladder's rung change); without it every run trains from the start, so a "
        "cleared task retrains",
    )
    p.add_argument("--connect-timeout", dest="connect_timeout", type=float, default=120.0)
    p.add_argument("--step-timeout", dest="step_timeout", type=float, default=120.0)
    p.add_argument("--eval-timeout", dest="eval_timeout", type=float, default=120.0)
    args = p.parse_args(argv)
    errors = []
    if not args.learning_rate > 0:
        errors.append(f"--learning_rate: must be > 0 (got {args.learning_rate})")
    if args.epochs < 1:
        errors.append(f"--epochs: must be >= 1 (got {args.epochs})")
    if args.batch_size < 1:
        errors.append(f"--batch_size: must be >= 1 (got {args.batch_size})")
    if args.l2 < 0:
        errors.append(f"--l2: must be >= 0 (got {args.l2})")
    if args.metric is None:
        args.metric = args.metric_id if args.metric_id in METRICS else "accuracy"
    if errors:
        p.error("; ".join(errors))
    return args


def _checkpoint_dir(args: argparse.Namespace) -> str | None:
    """``--checkpoint-dir`` or ``AIP_CHECKPOINT_DIR`` (a ``gs://`` URI on Vertex AI and the emulator)."""
    chosen: str | None = args.checkpoint_dir or os.environ.get("AIP_CHECKPOINT_DIR")
    return chosen or None


# -- checkpoints --------------------------------------------------------------------------------


class CheckpointError(ValueError):
    """A checkpoint the trainers cannot use (the message names the file and the field)."""


@dataclass(frozen=True)
class Checkpoint:
    """One ``ckpt-<step>.json``: the weights after ``step`` steps, at the end of epoch ``epoch``."""

    name: str
    epoch: int
    step: int
    weights: tuple[float, ...]


def checkpoint_names(names: Iterable[str]) -> list[str]:
    """The ``ckpt-<step>.json`` names among ``names``, oldest step first (by number, not by text)."""
    found = [(int(m[1]), n) for n in names if (m := _CKPT_RE.fullmatch(n))]
    return [n for _, n in sorted(found)]


def read_checkpoint(ckpt_dir: str, name: str) -> Checkpoint:
    try:
        raw = json.loads(gcs.read_text(gcs.join(ckpt_dir, name)))
    except ValueError as exc:
        raise CheckpointError(f"{name}: not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise CheckpointError(f"{name}: must be a JSON object")
    for key in ("epoch", "step"):
        value = raw.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CheckpointError(f"{name}: {key} must be a non-negative integer (got {value!r})")
    weights = raw.get("weights")
    if not isinstance(weights, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in weights
    ):
        raise CheckpointError(f"{name}: weights must be a list of numbers")
    return Checkpoint(name, raw["epoch"], raw["step"], tuple(float(v) for v in weights))


def latest_checkpoint(ckpt_dir: str | None) -> Checkpoint | None:
    """The newest checkpoint (highest step) in ``ckpt_dir``; None without a directory or a checkpoint."""
    if ckpt_dir is None:
        return None
    names = checkpoint_names(gcs.list_dir(ckpt_dir))
    return read_checkpoint(ckpt_dir, names[-1]) if names else None


def is_final(epoch: int, epochs: int) -> bool:
    """Whether a checkpoint at the end of ``epoch`` ends a run of ``epochs`` epochs: training is done.

    Decided by the epoch, not by the checkpoint's own ``final`` flag, which an earlier, shorter run
    (a smaller ``--epochs``) wrote into the same directory.
    """
    return epoch >= epochs


def _data_dir(args: argparse.Namespace) -> str | None:
    """``--data-dir`` as a local directory (a ``gs://`` one is downloaded to ./data first)."""
    return str(gcs.fetch_dir(args.data_dir, Path("data"))) if args.data_dir else None


# -- parameter server ---------------------------------------------------------------------------


def run_parameter_server(spec: ClusterSpec, args: argparse.Namespace) -> dict[str, Any]:
    server = ShardServer(spec.address, len(spec.trainers), timeout=args.step_timeout, name=spec.key).start()
    log.info("%s serving a weight shard at %s for %d trainers", spec.key, spec.address, len(spec.trainers))
    server.done.wait()
    server.wait_idle(10.0)  # the trainers hang up after their last step
    log.info("%s done after %d steps (at step %d)", spec.key, server.applied, server.version)
    server.stop()  # the port closes: the primary sees this server has stopped
    return {"role": "parameter_server", "steps": server.version, "applied": server.applied}


# -- trainers -----------------------------------------------------------------------------------


def _batches(shard: Dataset, batch_size: int, steps: int, epoch: int) -> list[tuple[list[Any], list[int]]]:
    out = []
    n = len(shard)
    for s in range(steps):
        start = (epoch * steps + s) * batch_size
        idx = [(start + j) % n for j in range(batch_size)]
        out.append(([shard.features[i] for i in idx], [shard.labels[i] for i in idx]))
    return out


def run_trainer(spec: ClusterSpec, args: argparse.Namespace) -> dict[str, Any]:
    rank = spec.trainer_rank
    assert rank is not None
    world = len(spec.trainers)
    data_dir = _data_dir(args)
    train, evaluation = load(
        data_dir, rows=args.rows, features=args.features, seed=args.seed, eval_fraction=args.eval_fraction
    )
    size = size_for(train.width)
    # With --resume every trainer (the workers too: synchronous SGD needs them to agree on the step
    # numbers) resumes from the newest checkpoint when it starts, and they all read the same one: the
    # primary writes a checkpoint only after the last step of an epoch, and a step ends only once every
    # trainer has sent its gradient for it, which a trainer does only after this read. So no checkpoint
    # of this run can appear before every trainer has read the directory (and no earlier run writes any
    # more: a restarted or retried job starts once the replicas before it have stopped).
    ckpt_dir = _checkpoint_dir(args)
    resume = latest_checkpoint(ckpt_dir) if args.resume else None
    if resume is not None and len(resume.weights) != size:
        raise CheckpointError(
            f"{resume.name}: {len(resume.weights)} weights, the model has {size} ({train.width} features)"
        )
    start_epoch = resume.epoch if resume is not None else 0
    start_step = resume.step if resume is not None else 0
    shards = spec.parameter_servers
    own_server: ShardServer | None = None
    if not shards:  # the primary holds the weights and serves them at its own address
        shards = (spec.primary_address,)
        if rank == 0:
            own_server = ShardServer(spec.address, world, timeout=args.step_timeout, name=spec.key).start()
    bounds = shard_bounds(size, len(shards))
    clients = [
        ShardClient(a, connect_timeout=args.connect_timeout, timeout=args.step_timeout + 30) for a in shards
    ]
    log.info(
        "%s is trainer %d of %d; %d train rows (%d on this shard), weights on %s",
        spec.key, rank, world, len(train), len(train.shard(rank, world)), ", ".join(shards),
    )  # fmt: skip
    # every trainer runs the same number of steps (synchronous SGD): enough for the largest shard
    steps_per_epoch = max(1, math.ceil(math.ceil(len(train) / world) / args.batch_size))
    if resume is not None:
        log.info("resuming from %s (epoch %d, step %d)", resume.name, resume.epoch, resume.step)
        if resume.step != resume.epoch * steps_per_epoch:
            log.warning(
                "%s: step %d is not %d epochs of %d steps (another batch size, dataset or cluster?); "
                "counting on from step %d", resume.name, resume.step, resume.epoch, steps_per_epoch,
                resume.step,
            )  # fmt: skip
        if is_final(resume.epoch, args.epochs):
            log.info(
                "training is done: %s is at epoch %d of --epochs %d", resume.name, resume.epoch, args.epochs
            )
    if rank == 0:
        initial = list(resume.weights) if resume is not None else [0.0] * size
        for client, (lo, hi) in zip(clients, bounds, strict=True):
            client.init(initial[lo:hi], start_step)
    weights = [v for c in clients for v in c.pull()]
    mine = train.shard(rank, world)
    if not len(mine):
        raise DatasetError(f"trainer {rank} has no rows: {len(train)} train rows for {world} trainers")
    step = start_step
    history: list[dict[str, Any]] = []  # the epochs this run trained
    started = time.monotonic()
    for epoch in range(start_epoch, args.epochs):
        for xs, ys in _batches(mine, args.batch_size, steps_per_epoch, epoch):
            grad = gradient(weights, xs, ys, args.l2)
            weights = []
            for client, (lo, hi) in zip(clients, bounds, strict=True):
                weights.extend(client.step(rank, step, grad[lo:hi], args.learning_rate))
            step += 1
        if rank == 0:
            scores = evaluate(weights, evaluation)
            history.append({"epoch": epoch + 1, "step": step, **scores})
            log.info("epoch %d step %d: %s", epoch + 1, step, scores)
            final = is_final(epoch + 1, args.epochs)
            report_metric(args.metric_id, scores[args.metric], step)
            if ckpt_dir is not None:
                gcs.write_json(
                    gcs.join(ckpt_dir, f"ckpt-{step:08d}.json"),
                    {"step": step, "epoch": epoch + 1, "weights": weights, "columns": list(train.columns),
                     "final": final},
                )  # fmt: skip
    elapsed = time.monotonic() - started
    if rank != 0:
        for client in clients:
            client.close()
        log.info("%s finished at step %d (%d this run) in %.2fs", spec.key, step, step - start_step, elapsed)
        return {"role": "worker", "rank": rank, "steps": step, "steps_run": step - start_step}

    scores = evaluate(weights, evaluation)
    if not history:  # done already (resumed from the final checkpoint): report the model's metric once
        report_metric(args.metric_id, scores[args.metric], step)
    evaluator = _wait_for_evaluator(spec, ckpt_dir, step, args.eval_timeout)
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
        "cluster": {"trainers": world, "parameter_servers": len(spec.parameter_servers)},
    }  # fmt: skip
    metrics = {
        **scores,
        "metric_id": args.metric_id,
        "metric": args.metric,
        "value": scores[args.metric],
        "train_rows": len(train),
        "eval_rows": len(evaluation),
        "steps": step,
        "steps_run": step - start_step,
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
    servers = []
    for client in clients:
        if spec.parameter_servers:  # each server's own count of the steps it applied
            reply = client.done()
            servers.append(
                {"address": client.address, "steps": reply["version"], "applied": reply["applied"],
                 "size": reply["size"]}
            )  # fmt: skip
        client.close()
    metrics["parameter_servers"] = servers
    for address in spec.parameter_servers:  # let them exit on their own before the job ends
        if not wait_closed(address, 10.0):
            log.warning("parameter server %s still listens 10s after done", address)
    gcs.write_json(gcs.join(model_dir, "model.json"), model)
    gcs.write_json(gcs.join(model_dir, "metrics.json"), metrics)
    log.info("model written to %s; %s = %.4f", model_dir, args.metric_id, scores[args.metric])
    if own_server is not None:
        own_server.stop(wait_for_peers=10.0)
    return {"role": "primary", "model_dir": model_dir, **scores}


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


# -- evaluator ----------------------------------------------------------------------------------


def run_evaluator(spec: ClusterSpec, args: argparse.Namespace) -> dict[str, Any]:
    ckpt_dir = _checkpoint_dir(args)
    if ckpt_dir is None:
        raise ClusterSpecError(
            "the evaluator needs AIP_CHECKPOINT_DIR (set the job's base_output_directory) or --checkpoint-dir"
        )
    data_dir = _data_dir(args)
    _, evaluation = load(
        data_dir, rows=args.rows, features=args.features, seed=args.seed, eval_fraction=args.eval_fraction
    )
    log.info("%s scoring checkpoints in %s on %d rows", spec.key, ckpt_dir, len(evaluation))
    deadline = time.monotonic() + args.eval_timeout + args.connect_timeout
    seen: set[str] = set()
    scored = already = 0
    while True:
        final: Checkpoint | None = None
        for name in checkpoint_names(gcs.list_dir(ckpt_dir)):
            if name in seen:
                continue
            ckpt = read_checkpoint(ckpt_dir, name)
            seen.add(name)
            if is_final(ckpt.epoch, args.epochs):
                final = ckpt
            uri = gcs.join(ckpt_dir, f"eval-{ckpt.step:08d}.json")
            if gcs.exists(uri):  # scored before a restart of the job, or by an earlier run
                already += 1
                log.info("%s step %d: scored already", name, ckpt.step)
                continue
            scores = evaluate(ckpt.weights, evaluation)
            result = {"checkpoint": name, "step": ckpt.step, "evaluator": spec.key, **scores}
            gcs.write_json(uri, result)
            scored += 1
            log.info("%s step %d: %s", name, ckpt.step, scores)
            deadline = time.monotonic() + args.eval_timeout  # progress: restart the clock
        if final is not None:  # every checkpoint listed so far is handled, the final one too
            return {"role": "evaluator", "checkpoints": scored, "scored_before": already, "final": final.name}
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"no final checkpoint in {ckpt_dir} (scored {scored}, {already} scored before)"
            )
        time.sleep(0.1)


def run(args: argparse.Namespace, spec: ClusterSpec) -> dict[str, Any]:
    if spec.role == "parameter_server":
        if spec.pool2_is_reduction_server:
            raise ClusterSpecError("workerpool2 runs the Reduction Server: the PS trainer cannot run there")
        return run_parameter_server(spec, args)
    if spec.role == "evaluator":
        return run_evaluator(spec, args)
    return run_trainer(spec, args)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        spec = ClusterSpec.from_env()
    except ClusterSpecError as exc:
        print(f"ps_trainer: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO, format=f"%(asctime)s {spec.key} %(levelname)s %(message)s", stream=sys.stdout
    )
    log.info("ps_trainer (from %s) starting as %s", Path(__file__).parent, spec.key)
    try:
        run(args, spec)
    except (CheckpointError, ClusterSpecError, DatasetError, PsError, TimeoutError) as exc:
        log.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
