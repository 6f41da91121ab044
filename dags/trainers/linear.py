"""Logistic regression in plain Python: weights ``[w_0 .. w_{d-1}, bias]``, gradients, scores."""

from __future__ import annotations

import math
from collections.abc import Sequence

from trainers.data import Dataset

__all__ = ["evaluate", "gradient", "predict_proba", "size_for"]


def size_for(width: int) -> int:
    """Number of parameters for ``width`` features (one weight each, plus the bias)."""
    return width + 1


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def predict_proba(weights: Sequence[float], x: Sequence[float]) -> float:
    """P(label = 1 | x)."""
    z = weights[-1]
    for w, v in zip(weights, x, strict=False):
        z += w * v
    return _sigmoid(z)


def gradient(
    weights: Sequence[float], xs: Sequence[Sequence[float]], ys: Sequence[int], l2: float = 0.0
) -> list[float]:
    """Mean log-loss gradient over the batch ``(xs, ys)``, plus ``l2 * w`` (not on the bias)."""
    n = len(ys)
    grad = [0.0] * len(weights)
    for x, y in zip(xs, ys, strict=True):
        err = predict_proba(weights, x) - y
        for i, v in enumerate(x):
            grad[i] += err * v
        grad[-1] += err
    out = [g / n for g in grad]
    if l2:
        for i in range(len(out) - 1):
            out[i] += l2 * weights[i]
    return out


def evaluate(weights: Sequence[float], data: Dataset) -> dict[str, float]:
    """``accuracy`` and ``log_loss`` of ``weights`` on ``data``."""
    correct = 0
    loss = 0.0
    eps = 1e-12
    for x, y in zip(data.features, data.labels, strict=True):
        p = predict_proba(weights, x)
        correct += int((p >= 0.5) == bool(y))
        loss -= math.log(max(p, eps)) if y else math.log(max(1.0 - p, eps))
    n = max(1, len(data))
    return {"accuracy": correct / n, "log_loss": loss / n}
