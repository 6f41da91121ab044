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
- after every epoch the primary writes a checkpoint to ``AIP_CHECKPOINT_DIR`` (``ckpt-<step>.json``);
  the evaluator (workerpool3) scores each checkpoint on the evaluation rows (``eval-<step>.json``
  beside it) and exits after the final one, which the primary waits for;
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
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainers import gcs
from trainers.cluster import ClusterSpec, ClusterSpecError
from trainers.data import Dataset, DatasetError, load
from trainers.linear import evaluate, gradient, size_for
from trainers.metrics import report_metric
from trainers.ps import PsError, ShardClient, ShardServer, shard_bounds, wait_closed

__all__ = ["main", "parse_args", "run"]

log = logging.getLogger("trainers.ps_trainer")
METRICS = ("accuracy", "log_loss")


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


def _data_dir(args: argparse.Namespace) -> str | None:
    """``--data-dir`` as a local directory (a ``gs://`` one is downloaded to ./data first)."""
    return str(gcs.fetch_dir(args.data_dir, Path("data"))) if args.data_dir else None


# -- parameter server ---------------------------------------------------------------------------


def run_parameter_server(spec: ClusterSpec, args: argparse.Namespace) -> dict[str, Any]:
    server = ShardServer(spec.address, len(spec.trainers), timeout=args.step_timeout, name=spec.key).start()
    log.info("%s serving a weight shard at %s for %d trainers", spec.key, spec.address, len(spec.trainers))
    server.done.wait()
    server.wait_idle(10.0)  # the trainers hang up after their last step
    log.info("%s done after %d steps", spec.key, server.version)
    server.stop()  # the port closes: the primary sees this server has stopped
    return {"role": "parameter_server", "steps": server.version}


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
    if rank == 0:
        for client, (lo, hi) in zip(clients, bounds, strict=True):
            client.init([0.0] * (hi - lo))
    weights = [v for c in clients for v in c.pull()]
    mine = train.shard(rank, world)
    if not len(mine):
        raise DatasetError(f"trainer {rank} has no rows: {len(train)} train rows for {world} trainers")
    # every trainer runs the same number of steps (synchronous SGD): enough for the largest shard
    steps_per_epoch = max(1, math.ceil(math.ceil(len(train) / world) / args.batch_size))
    ckpt_dir = _checkpoint_dir(args) if rank == 0 else None
    step = 0
    history: list[dict[str, Any]] = []
    started = time.monotonic()
    for epoch in range(args.epochs):
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
            final = epoch + 1 == args.epochs
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
        log.info("%s finished %d steps in %.2fs", spec.key, step, elapsed)
        return {"role": "worker", "rank": rank, "steps": step}

    scores = evaluate(weights, evaluation)
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
        "seconds": round(elapsed, 3),
        "history": history,
        "evaluator": evaluator,
        "trial": spec.trial,
    }
    servers = []
    for client in clients:
        if spec.parameter_servers:  # each server's own count of the steps it applied
            reply = client.done()
            servers.append({"address": client.address, "steps": reply["version"], "size": reply["size"]})
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
    scored: set[str] = set()
    while True:
        found = [n for n in gcs.list_dir(ckpt_dir) if n.startswith("ckpt-") and n.endswith(".json")]
        for name in found:
            if name in scored:
                continue
            ckpt = json.loads(gcs.read_text(gcs.join(ckpt_dir, name)))
            scores = evaluate(ckpt["weights"], evaluation)
            result = {"checkpoint": name, "step": ckpt["step"], "evaluator": spec.key, **scores}
            gcs.write_json(gcs.join(ckpt_dir, f"eval-{ckpt['step']:08d}.json"), result)
            scored.add(name)
            log.info("%s step %d: %s", name, ckpt["step"], scores)
            if ckpt.get("final"):
                return {"role": "evaluator", "checkpoints": len(scored), **scores}
            deadline = time.monotonic() + args.eval_timeout  # progress: restart the clock
        if time.monotonic() > deadline:
            raise TimeoutError(f"no final checkpoint in {ckpt_dir} (scored {len(scored)})")
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
    except (ClusterSpecError, DatasetError, PsError, TimeoutError) as exc:
        log.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
