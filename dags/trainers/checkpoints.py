"""Checkpoints of the parameter-server example (``ckpt-<step>.json`` in ``AIP_CHECKPOINT_DIR``): the
weights after a step at the end of an epoch, which a restarted or retried job resumes from."""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from trainers import gcs

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "checkpoint_dir",
    "checkpoint_names",
    "is_final",
    "latest_checkpoint",
    "read_checkpoint",
]

_CKPT_RE = re.compile(r"ckpt-(\d+)\.json")


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


def checkpoint_dir(args: argparse.Namespace) -> str | None:
    """``--checkpoint-dir`` or ``AIP_CHECKPOINT_DIR`` (a ``gs://`` URI on Vertex AI and the emulator)."""
    chosen: str | None = args.checkpoint_dir or os.environ.get("AIP_CHECKPOINT_DIR")
    return chosen or None
