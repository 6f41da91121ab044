"""PyTorch DistributedDataParallel training for Vertex AI worker pools (and the Reduction Server layout).

The process group starts with ``init_method="env://"``: Vertex AI (like AI Platform Training before
it) gives the replicas of pools 0 and 1 ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` and ``RANK``;
the primary (workerpool0) is rank 0 and hosts the rendezvous, the workers (workerpool1) are ranks
1..n. (trainers.cluster.ddp_world derives the same from CLUSTER_SPEC; the trainer logs it and fails
clearly when a variable is missing.) The Reduction Server pool (workerpool2) is not part of the world: on
Vertex its replicas take over the all-reduce of NCCL (GPU) jobs; in the emulator they are idle.

The backend is NCCL when CUDA is available, else gloo on CPU (``--backend`` overrides). Gradients
are bucketed with ``bucket_cap_mb=64`` (``--bucket-cap-mb``), what the Reduction Server guidance
recommends over the default 25 MB: fewer, larger messages.

The model is a small MLP classifying the examples' dataset (trainers.data: ``--data-dir`` or a
synthetic one from ``--seed``). Each rank trains on its shard (every world-th row), the same number
of steps. Rank 0 evaluates after every epoch, reports the metric with cloudml-hypertune
(``--metric-id``), and writes ``model.pt`` (state dict), ``model.json`` and ``metrics.json`` to
``AIP_MODEL_DIR`` (a ``gs://`` URI: written with google-cloud-storage, trainers.gcs). Needs torch
(the ``examples`` extra); only the standard library is imported until the trainer runs.
"""

from __future__ import annotations

import argparse
import io
import logging
import math
import os
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from trainers import gcs
from trainers.cluster import ClusterSpec, ClusterSpecError, DdpWorld, ddp_world
from trainers.data import Dataset, DatasetError, load
from trainers.metrics import report_metric

__all__ = [
    "DEFAULT_BUCKET_CAP_MB",
    "TORCH_ENV",
    "build_model",
    "env_world",
    "init_method",
    "main",
    "parse_args",
    "run",
]

log = logging.getLogger("trainers.ddp_trainer")
#: the Reduction Server guidance for PyTorch DDP (the library default is 25)
DEFAULT_BUCKET_CAP_MB = 64
METRICS = ("accuracy", "log_loss")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m trainers.ddp_trainer", description=__doc__.split("\n")[0])
    p.add_argument("--learning_rate", "--learning-rate", dest="learning_rate", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch_size", "--batch-size", dest="batch_size", type=int, default=32)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--data-dir", "--data_dir", dest="data_dir", default=None)
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--features", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-fraction", dest="eval_fraction", type=float, default=0.2)
    p.add_argument("--metric-id", "--metric_id", dest="metric_id", default="accuracy")
    p.add_argument("--metric", choices=METRICS, default=None, help="default: --metric-id if it names one")
    p.add_argument("--model-dir", dest="model_dir", default=None, help="default: $AIP_MODEL_DIR or ./model")
    p.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
    p.add_argument("--bucket-cap-mb", dest="bucket_cap_mb", type=float, default=DEFAULT_BUCKET_CAP_MB)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per replica")
    p.add_argument("--connect-timeout", dest="connect_timeout", type=float, default=120.0)
    args = p.parse_args(argv)
    errors = []
    if not args.learning_rate > 0:
        errors.append(f"--learning_rate: must be > 0 (got {args.learning_rate})")
    for name in ("epochs", "batch_size", "hidden", "threads"):
        if getattr(args, name) < 1:
            errors.append(f"--{name}: must be >= 1 (got {getattr(args, name)})")
    if not args.bucket_cap_mb > 0:
        errors.append(f"--bucket-cap-mb: must be > 0 (got {args.bucket_cap_mb})")
    if args.metric is None:
        args.metric = args.metric_id if args.metric_id in METRICS else "accuracy"
    if errors:
        p.error("; ".join(errors))
    return args


def init_method(world: DdpWorld) -> str:
    """``tcp://host:port`` of the rendezvous on rank 0 (IPv6 hosts in brackets)."""
    host = f"[{world.master_addr}]" if ":" in world.master_addr else world.master_addr
    return f"tcp://{host}:{world.master_port}"


def build_model(width: int, hidden: int) -> Any:
    """The MLP every rank trains: ``width`` features -> ``hidden`` ReLU units -> one logit."""
    from torch import nn

    return nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, 1))


def _tensors(data: Dataset) -> tuple[Any, Any]:
    import torch

    return (
        torch.tensor(data.features, dtype=torch.float32),
        torch.tensor(data.labels, dtype=torch.float32).unsqueeze(1),
    )


def _evaluate(model: Any, data: Dataset, device: Any) -> dict[str, float]:
    import torch

    x, y = _tensors(data)
    with torch.no_grad():
        logits = model(x.to(device)).cpu()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y).item()
        accuracy = ((logits >= 0).float() == y).float().mean().item()
    return {"accuracy": float(accuracy), "log_loss": float(loss)}


TORCH_ENV = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")


def env_world(env: Mapping[str, str] | None = None) -> DdpWorld:
    """The world ``init_method="env://"`` will read, from the variables Vertex AI sets."""
    env = os.environ if env is None else env
    missing = [name for name in TORCH_ENV if not env.get(name)]
    if missing:
        raise ClusterSpecError(
            f"{', '.join(missing)}: not set; Vertex AI sets {', '.join(TORCH_ENV)} in the replicas of "
            "workerpool0 and workerpool1 (env:// rendezvous)"
        )
    try:
        return DdpWorld(
            rank=int(env["RANK"]),
            world_size=int(env["WORLD_SIZE"]),
            master_addr=env["MASTER_ADDR"],
            master_port=int(env["MASTER_PORT"]),
        )
    except ValueError as exc:
        raise ClusterSpecError(f"RANK, WORLD_SIZE and MASTER_PORT must be integers: {exc}") from None


def run(args: argparse.Namespace, spec: ClusterSpec) -> dict[str, Any]:
    ddp_world(spec)  # workerpool2 (reducers) and workerpool3 are not part of the world: a clear error
    world = env_world()
    warnings.filterwarnings("ignore", message=".*Failed to initialize NumPy.*")
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    device = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
    data_dir = str(gcs.fetch_dir(args.data_dir, Path("data"))) if args.data_dir else None
    train, evaluation = load(
        data_dir, rows=args.rows, features=args.features, seed=args.seed, eval_fraction=args.eval_fraction
    )
    mine = train.shard(world.rank, world.world_size)
    if not len(mine):
        raise DatasetError(
            f"rank {world.rank} has no rows: {len(train)} train rows for {world.world_size} ranks"
        )
    log.info(
        "%s is rank %d of %d (%s, rendezvous %s); %d of %d train rows",
        spec.key, world.rank, world.world_size, backend, init_method(world), len(mine), len(train),
    )  # fmt: skip
    # env://: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK as Vertex AI sets them
    dist.init_process_group(backend, init_method="env://", timeout=timedelta(seconds=args.connect_timeout))
    try:
        model = build_model(train.width, args.hidden).to(device)
        ddp: Any = DistributedDataParallel(
            model,
            device_ids=[device.index] if device.type == "cuda" else None,
            bucket_cap_mb=args.bucket_cap_mb,
        )
        optimizer = torch.optim.SGD(ddp.parameters(), lr=args.learning_rate, momentum=args.momentum)
        loss_fn = torch.nn.BCEWithLogitsLoss()
        x_all, y_all = _tensors(mine)
        steps_per_epoch = max(1, math.ceil(math.ceil(len(train) / world.world_size) / args.batch_size))
        step = 0
        history: list[dict[str, Any]] = []
        started = time.monotonic()
        for epoch in range(args.epochs):
            ddp.train()
            for s in range(steps_per_epoch):
                start = (epoch * steps_per_epoch + s) * args.batch_size
                idx = torch.arange(start, start + args.batch_size) % len(mine)
                optimizer.zero_grad()
                loss = loss_fn(ddp(x_all[idx].to(device)), y_all[idx].to(device))
                loss.backward()  # DDP all-reduces the gradient buckets across ranks here
                optimizer.step()
                step += 1
            if world.rank == 0:
                ddp.eval()
                scores = _evaluate(model, evaluation, device)
                history.append({"epoch": epoch + 1, "step": step, **scores})
                log.info("epoch %d step %d: %s", epoch + 1, step, scores)
                report_metric(args.metric_id, scores[args.metric], step)
        elapsed = time.monotonic() - started
        result: dict[str, Any] = {"role": "primary" if world.rank == 0 else "worker", "rank": world.rank}
        if world.rank == 0:
            scores = _evaluate(model, evaluation, device)
            reducers = len(spec.addresses(2)) if spec.pool2_is_reduction_server else 0
            model_dir = args.model_dir or os.environ.get("AIP_MODEL_DIR") or "model"
            buf = io.BytesIO()
            torch.save(model.state_dict(), buf)
            gcs.write_bytes(gcs.join(model_dir, "model.pt"), buf.getvalue())
            gcs.write_json(
                gcs.join(model_dir, "model.json"),
                {"kind": "mlp", "columns": list(train.columns), "width": train.width, "hidden": args.hidden,
                 "state_dict": "model.pt", "steps": step},
            )  # fmt: skip
            gcs.write_json(
                gcs.join(model_dir, "metrics.json"),
                {
                    **scores,
                    "metric_id": args.metric_id,
                    "metric": args.metric,
                    "value": scores[args.metric],
                    "train_rows": len(train),
                    "eval_rows": len(evaluation),
                    "steps": step,
                    "seconds": round(elapsed, 3),
                    "history": history,
                    "trial": spec.trial,
                    "ddp": {
                        "backend": backend,
                        "world_size": world.world_size,
                        "bucket_cap_mb": args.bucket_cap_mb,
                        "bucket_bytes_cap": int(ddp.bucket_bytes_cap),
                        "reduction_server_replicas": reducers,
                    },
                },
            )
            log.info("model written to %s; %s = %.4f", model_dir, args.metric_id, scores[args.metric])
            result.update(scores, model_dir=str(model_dir))
        dist.barrier()  # nobody leaves (and tears the group down) while rank 0 still writes
        return result
    finally:
        dist.destroy_process_group()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        spec = ClusterSpec.from_env()
    except ClusterSpecError as exc:
        print(f"ddp_trainer: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO, format=f"%(asctime)s {spec.key} %(levelname)s %(message)s", stream=sys.stdout
    )
    log.info("ddp_trainer (from %s) starting as %s", Path(__file__).parent, spec.key)
    try:
        run(args, spec)
    except (ClusterSpecError, DatasetError) as exc:
        log.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
