"""The data-prep step of the examples: write a dataset directory a training job reads with ``--data-dir``.

``python -m trainers.prep --out-dir DIR [--rows N --features D --seed S --noise X --format csv]``
writes ``train.<fmt>``, ``eval.<fmt>`` and ``dataset.json`` and prints the manifest as one JSON line.
``DIR`` may be ``gs://bucket/path``: it is written with google-cloud-storage, or under
``GCS_MOUNT_ROOT`` when that is set (trainers.gcs). From Python (an Airflow task): ``prepare``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainers import gcs
from trainers.data import FORMATS, DatasetError, split, synthesize, write_dataset

__all__ = ["main", "prepare"]


def prepare(
    out_dir: str | Path,
    *,
    rows: int = 2000,
    features: int = 8,
    seed: int = 0,
    noise: float = 0.5,
    eval_fraction: float = 0.2,
    fmt: str = "csv",
    **info: Any,
) -> dict[str, Any]:
    """Synthesize the dataset for ``seed`` and write it to ``out_dir``; returns the manifest."""
    train, evaluation = split(synthesize(rows, features, seed, noise), eval_fraction)
    with tempfile.TemporaryDirectory(prefix="prep-") as tmp:
        manifest = write_dataset(tmp, train, evaluation, fmt, seed=seed, noise=noise, **info)
        for path in sorted(Path(tmp).iterdir()):
            gcs.write_bytes(gcs.join(str(out_dir), path.name), path.read_bytes())
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m trainers.prep", description=__doc__.split("\n")[0])
    p.add_argument("--out-dir", "--out_dir", dest="out_dir", required=True)
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--features", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--noise", type=float, default=0.5)
    p.add_argument("--eval-fraction", dest="eval_fraction", type=float, default=0.2)
    p.add_argument("--format", dest="fmt", choices=FORMATS, default="csv")
    args = p.parse_args(argv)
    try:
        manifest = prepare(
            args.out_dir,
            rows=args.rows,
            features=args.features,
            seed=args.seed,
            noise=args.noise,
            eval_fraction=args.eval_fraction,
            fmt=args.fmt,
        )
    except (gcs.GcsError, DatasetError) as exc:
        print(f"prep: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(manifest, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
