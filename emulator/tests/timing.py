"""The ratio test of the parser probes: adversarial input costs at most a few times benign input.

The provider's security probes load this module (tests/emulator_files.py): the emulator's tests
run from the emulator's own install, where the provider's tests are not importable.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["RATIO", "SLACK_S", "assert_linear", "best_of"]

#: adversarial <= RATIO x benign + SLACK_S: generous, for a loaded 2-core machine.
RATIO = 5.0
SLACK_S = 0.05


def best_of(
    run: Callable[[], object], times: int = 3, clock: Callable[[], float] = time.perf_counter
) -> float:
    """The shortest of ``times`` runs, in seconds of ``clock`` (the run least disturbed by others)."""
    best = float("inf")
    for _ in range(times):
        started = clock()
        run()
        best = min(best, clock() - started)
    return best


def assert_linear(adversarial: Callable[[], object], benign: Callable[[], object], what: str) -> float:
    """Adversarial input costs at most ``RATIO`` times benign input of the same size (plus
    ``SLACK_S``); returns the adversarial time. Both run in this thread and are timed by its CPU
    clock (``time.thread_time``), which other processes on a loaded machine do not advance: a
    neighbour's burst during one of the runs cannot make a linear parser look quadratic."""
    bad, good = best_of(adversarial, clock=time.thread_time), best_of(benign, clock=time.thread_time)
    assert bad <= RATIO * good + SLACK_S, f"{what}: {bad:.3f} s against {good:.3f} s for benign input"
    return bad
