"""Automated early stopping of tuning trials, from their intermediate measurements.

A curve is a trial's ``(step, objective)`` points in reporting order, from the lines its primary
replica wrote through cloudml-hypertune (``global_step`` and the study's first metric). The rules
compare a running trial's curve with the curves of trials that ran to their end:

* **median** (``medianAutomatedStoppingSpec``), as the v1 reference words it: "stops a pending Trial
  if the Trial's best objective_value is strictly below the median 'performance' of all completed
  Trials reported up to the Trial's last measurement. Currently, 'performance' refers to the running
  average of the objective values reported by the Trial in each measurement." ("below" is "worse":
  above, for a metric to minimize.)
* **decay curve** (``decayCurveStoppingSpec``): the service fits a Gaussian process to predict the
  trial's final objective and stops it when there is "very low probability to exceed the optimal
  value found so far". The emulator has no Gaussian process; it predicts with the completed trials'
  own curves: the trial's latest value plus the *largest* improvement any completed trial made after
  the same step. If even that optimistic prediction does not reach the best final value, the trial
  is stopped. It stops fewer trials than the service would, never more eagerly.

Both need at least ``MIN_COMPLETED`` completed trials with a measurement at or before the running
trial's last step.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["MIN_COMPLETED", "Curve", "decay_curve_should_stop", "median_should_stop"]

Curve = Sequence[tuple[float, float]]

#: Completed trials a rule needs before it stops anything.
MIN_COMPLETED = 2


def _better(a: float, b: float, maximize: bool) -> bool:
    return a > b if maximize else a < b


def _up_to(curve: Curve, step: float) -> list[float]:
    return [value for s, value in curve if s <= step]


def median_should_stop(current: Curve, completed: Sequence[Curve], *, maximize: bool) -> bool:
    """Whether the median rule stops the trial whose measurements so far are ``current``."""
    if not current:
        return False
    last_step = current[-1][0]
    performances = [statistics.fmean(seen) for c in completed if (seen := _up_to(c, last_step))]
    if len(performances) < MIN_COMPLETED:
        return False
    median = statistics.median(performances)
    values = [value for _, value in current]
    best = max(values) if maximize else min(values)
    return _better(median, best, maximize)


def decay_curve_should_stop(current: Curve, completed: Sequence[Curve], *, maximize: bool) -> bool:
    """Whether the decay-curve rule (the emulator's prediction, see the module doc) stops the trial."""
    if not current:
        return False
    last_step, latest = current[-1]
    gains: list[float] = []
    finals: list[float] = []
    for curve in completed:
        seen = _up_to(curve, last_step)
        if not seen or not curve:
            continue
        final = curve[-1][1]
        finals.append(final)
        gains.append(final - seen[-1] if maximize else seen[-1] - final)
    if len(finals) < MIN_COMPLETED:
        return False
    best_final = max(finals) if maximize else min(finals)
    most = max(0.0, max(gains))
    predicted = latest + most if maximize else latest - most
    return _better(best_final, predicted, maximize)
