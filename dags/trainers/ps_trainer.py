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

Hyperparameters: ``--learning_rate``, ``--epochs``, ``--batch_size``, ``--l2``; ``--epoch-seconds``
makes each epoch last at least that long (a bigger model's pace, for a rehearsal). Data: ``--data-dir``
(a prep step's CSV/JSONL directory, see trainers.data; ``gs://`` is read with google-cloud-storage,
trainers.gcs) or a synthetic dataset from ``--rows``/``--features``/``--seed``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainers import gcs
from trainers.checkpoints import (
    Checkpoint,
    CheckpointError,
    checkpoint_dir,
    checkpoint_names,
    is_final,
    read_checkpoint,
)
from trainers.cluster import ClusterSpec, ClusterSpecError
from trainers.data import DatasetError, load
from trainers.linear import evaluate
from trainers.ps import PsError, ShardServer
from trainers.sync_sgd import local_data_dir, run_trainer

__all__ = [
    "main",
    "parse_args",
    "run",
]

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
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest checkpoint in the checkpoint directory (after a Spot preemption, a "
        "retry or a capacity ladder's rung change); without it every run trains from the start, so a "
        "cleared task retrains",
    )
    p.add_argument(
        "--epoch-seconds",
        dest="epoch_seconds",
        type=float,
        default=0.0,
        help="the least real seconds an epoch takes (it waits out the rest before its checkpoint): a "
        "bigger model's epoch, for a rehearsal whose preemptions must fall between checkpoints",
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
    if not 0 <= args.epoch_seconds <= 86400:
        errors.append(f"--epoch-seconds: must be from 0 to 86400 (got {args.epoch_seconds})")
    if args.batch_size < 1:
        errors.append(f"--batch_size: must be >= 1 (got {args.batch_size})")
    if args.l2 < 0:
        errors.append(f"--l2: must be >= 0 (got {args.l2})")
    if args.metric is None:
        args.metric = args.metric_id if args.metric_id in METRICS else "accuracy"
    if errors:
        p.error("; ".join(errors))
    return args


# -- parameter server ---------------------------------------------------------------------------


def run_parameter_server(spec: ClusterSpec, args: argparse.Namespace) -> dict[str, Any]:
    server = ShardServer(spec.address, len(spec.trainers), timeout=args.step_timeout, name=spec.key).start()
    log.info("%s serving a weight shard at %s for %d trainers", spec.key, spec.address, len(spec.trainers))
    server.done.wait()
    server.wait_idle(10.0)  # the trainers hang up after their last step
    log.info("%s done after %d steps (at step %d)", spec.key, server.applied, server.version)
    server.stop()  # the port closes: the primary sees this server has stopped
    return {"role": "parameter_server", "steps": server.version, "applied": server.applied}


# -- evaluator ----------------------------------------------------------------------------------


def run_evaluator(spec: ClusterSpec, args: argparse.Namespace) -> dict[str, Any]:
    ckpt_dir = checkpoint_dir(args)
    if ckpt_dir is None:
        raise ClusterSpecError(
            "the evaluator needs AIP_CHECKPOINT_DIR (set the job's base_output_directory) or --checkpoint-dir"
        )
    data_dir = local_data_dir(args)
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
