"""The examples' dataset: a seeded synthetic binary classification task, and its CSV/JSONL files.

A dataset directory (what a data-prep step writes and ``--data-dir`` reads) holds ``train.csv`` and
``eval.csv`` (or ``.jsonl``) plus a ``dataset.json`` manifest. CSV files have a header with the
feature columns and a ``label`` column (0 or 1); JSONL lines are ``{"features": [...], "label": 0}``
or flat objects of numeric feature columns and ``label``. A directory without ``train.*`` is read
as every ``*.csv``/``*.jsonl`` file in name order, split into train and eval.
"""

from __future__ import annotations

import csv
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "FORMATS",
    "Dataset",
    "DatasetError",
    "load",
    "read_dataset",
    "split",
    "synthesize",
    "write_dataset",
]

FORMATS = ("csv", "jsonl")
LABEL = "label"


class DatasetError(ValueError):
    """A dataset file or directory is unusable; the message names the file, line and rule."""


@dataclass(frozen=True)
class Dataset:
    """Rows of float features with a 0/1 label."""

    features: tuple[tuple[float, ...], ...]
    labels: tuple[int, ...]
    columns: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.features) != len(self.labels):
            raise DatasetError(f"{len(self.features)} feature rows but {len(self.labels)} labels")

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def width(self) -> int:
        return len(self.columns)

    def shard(self, rank: int, world: int) -> Dataset:
        """Every ``world``-th row starting at ``rank`` (the rows trainer ``rank`` owns)."""
        return Dataset(self.features[rank::world], self.labels[rank::world], self.columns)


def synthesize(rows: int = 2000, features: int = 8, seed: int = 0, noise: float = 0.5) -> Dataset:
    """Points ``x ~ N(0, I)`` labelled by a random hyperplane (``seed``) plus Gaussian ``noise``."""
    if rows < 1:
        raise DatasetError(f"rows: must be >= 1 (got {rows})")
    if features < 1:
        raise DatasetError(f"features: must be >= 1 (got {features})")
    if noise < 0:
        raise DatasetError(f"noise: must be >= 0 (got {noise})")
    rng = random.Random(seed)
    true_w = [rng.gauss(0.0, 1.0) for _ in range(features)]
    true_b = rng.gauss(0.0, 0.5)
    xs: list[tuple[float, ...]] = []
    ys: list[int] = []
    for _ in range(rows):
        x = tuple(round(rng.gauss(0.0, 1.0), 6) for _ in range(features))
        z = sum(w * v for w, v in zip(true_w, x, strict=True)) + true_b + rng.gauss(0.0, noise)
        xs.append(x)
        ys.append(1 if z > 0 else 0)
    return Dataset(tuple(xs), tuple(ys), tuple(f"x{i}" for i in range(features)))


def split(data: Dataset, eval_fraction: float = 0.2) -> tuple[Dataset, Dataset]:
    """The first rows for training, the last ``eval_fraction`` for evaluation (rows are already random)."""
    if not 0 < eval_fraction < 1:
        raise DatasetError(f"eval_fraction: must be between 0 and 1 (got {eval_fraction})")
    n_eval = max(1, int(round(len(data) * eval_fraction)))
    if n_eval >= len(data):
        raise DatasetError(f"{len(data)} rows are too few to keep {n_eval} for evaluation")
    cut = len(data) - n_eval
    return (
        Dataset(data.features[:cut], data.labels[:cut], data.columns),
        Dataset(data.features[cut:], data.labels[cut:], data.columns),
    )


# -- files ------------------------------------------------------------------------------------


def _label(raw: Any, where: str) -> int:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: column 'label' must be 0 or 1 (got {raw!r})") from None
    if value not in (0.0, 1.0):
        raise DatasetError(f"{where}: column 'label' must be 0 or 1 (got {raw!r})")
    return int(value)


def _number(raw: Any, column: str, where: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: column {column!r} must be a number (got {raw!r})") from None
    if not math.isfinite(value):
        raise DatasetError(f"{where}: column {column!r} must be finite (got {raw!r})")
    return value


def _read_csv(path: Path) -> Dataset:
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header:
            raise DatasetError(f"{path.name} line 1: a header row is required")
        if LABEL not in header:
            raise DatasetError(f"{path.name} line 1: the header needs a 'label' column (got {header})")
        li = header.index(LABEL)
        cols = tuple(c for i, c in enumerate(header) if i != li)
        xs: list[tuple[float, ...]] = []
        ys: list[int] = []
        for lineno, row in enumerate(reader, start=2):
            if not row:
                continue
            where = f"{path.name} line {lineno}"
            if len(row) != len(header):
                raise DatasetError(f"{where}: {len(row)} columns, the header has {len(header)}")
            ys.append(_label(row[li], where))
            xs.append(tuple(_number(v, header[i], where) for i, v in enumerate(row) if i != li))
    return Dataset(tuple(xs), tuple(ys), cols)


def _read_jsonl(path: Path) -> Dataset:
    xs: list[tuple[float, ...]] = []
    ys: list[int] = []
    cols: tuple[str, ...] | None = None
    with path.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path.name} line {lineno}"
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise DatasetError(f"{where}: not valid JSON ({exc})") from None
            if not isinstance(obj, dict) or LABEL not in obj:
                raise DatasetError(f"{where}: must be a JSON object with a 'label' key")
            ys.append(_label(obj[LABEL], where))
            if "features" in obj:
                feats = obj["features"]
                if not isinstance(feats, list):
                    raise DatasetError(f"{where}: 'features' must be a list of numbers")
                row_cols = tuple(f"x{i}" for i in range(len(feats)))
                values = [_number(v, f"features[{i}]", where) for i, v in enumerate(feats)]
            else:
                row_cols = tuple(k for k in obj if k != LABEL)
                values = [_number(obj[k], k, where) for k in row_cols]
            if cols is None:
                cols = row_cols
            elif row_cols != cols:
                raise DatasetError(f"{where}: columns {list(row_cols)} differ from line 1's {list(cols)}")
            xs.append(tuple(values))
    return Dataset(tuple(xs), tuple(ys), cols or ())


def _read_file(path: Path) -> Dataset:
    data = _read_csv(path) if path.suffix == ".csv" else _read_jsonl(path)
    if not len(data):
        raise DatasetError(f"{path.name}: no rows")
    if not data.width:
        raise DatasetError(f"{path.name}: no feature columns")
    return data


def _concat(parts: Sequence[tuple[Path, Dataset]]) -> Dataset:
    first_path, first = parts[0]
    xs: list[tuple[float, ...]] = []
    ys: list[int] = []
    for path, part in parts:
        if part.columns != first.columns:
            raise DatasetError(
                f"{path.name}: columns {list(part.columns)} differ from {first_path.name}'s "
                f"{list(first.columns)}"
            )
        xs.extend(part.features)
        ys.extend(part.labels)
    return Dataset(tuple(xs), tuple(ys), first.columns)


def _find(directory: Path, stem: str) -> Path | None:
    for fmt in FORMATS:
        path = directory / f"{stem}.{fmt}"
        if path.is_file():
            return path
    return None


def read_dataset(directory: Path | str, eval_fraction: float = 0.2) -> tuple[Dataset, Dataset]:
    """``(train, eval)`` from a dataset directory (see the module docstring)."""
    root = Path(directory)
    if not root.is_dir():
        raise DatasetError(f"--data-dir: {str(root)!r} is not a directory")
    train_path = _find(root, "train")
    if train_path is not None:
        train = _read_file(train_path)
        eval_path = _find(root, "eval")
        if eval_path is None:
            return split(train, eval_fraction)
        evaluation = _read_file(eval_path)
        _concat([(train_path, train), (eval_path, evaluation)])  # same columns
        return train, evaluation
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix in (".csv", ".jsonl"))
    if not files:
        raise DatasetError(f"--data-dir: no .csv or .jsonl files in {str(root)!r}")
    return split(_concat([(p, _read_file(p)) for p in files]), eval_fraction)


def _write(path: Path, data: Dataset, fmt: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as fh:
        if fmt == "csv":
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow([*data.columns, LABEL])
            for x, y in zip(data.features, data.labels, strict=True):
                writer.writerow([*(repr(v) for v in x), y])
        else:
            for x, y in zip(data.features, data.labels, strict=True):
                fh.write(json.dumps({"features": list(x), LABEL: y}) + "\n")
    tmp.replace(path)


def write_dataset(
    directory: Path | str, train: Dataset, evaluation: Dataset, fmt: str = "csv", **info: Any
) -> dict[str, Any]:
    """Write ``train.<fmt>``, ``eval.<fmt>`` and ``dataset.json`` (with ``info``); returns the manifest."""
    if fmt not in FORMATS:
        raise DatasetError(f"format: must be one of {list(FORMATS)} (got {fmt!r})")
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    _write(root / f"train.{fmt}", train, fmt)
    _write(root / f"eval.{fmt}", evaluation, fmt)
    manifest = {
        "format": fmt,
        "columns": list(train.columns),
        "train_rows": len(train),
        "eval_rows": len(evaluation),
        "positive_fraction": round(sum(train.labels) / len(train), 6),
        **info,
    }
    (root / "dataset.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def load(
    data_dir: str | Path | None,
    *,
    rows: int,
    features: int,
    seed: int,
    eval_fraction: float = 0.2,
) -> tuple[Dataset, Dataset]:
    """``(train, eval)`` from ``data_dir`` when given, else synthesized from ``seed``."""
    if data_dir:
        return read_dataset(data_dir, eval_fraction)
    return split(synthesize(rows, features, seed), eval_fraction)
