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

* **convex** (``convexAutomatedStoppingSpec``, ``ConvexRule``), as the v1 reference words it: "When
  there are enough completed trials (configured by min_measurement_count), for pending trials with
  enough measurements and steps, the policy first computes an overestimate of the objective value at
  max_num_steps according to the slope of the incomplete objective value curve. No prediction can be
  made if the curve is completely flat. If the overestimation is worse than the best objective value
  of the completed trials, this pending trial will be early-stopped". Its fields: at least
  ``minMeasurementCount`` + 1 completed trials and ``minMeasurementCount`` measurements of the trial
  (default 5); only a trial whose last step is past ``minStepCount`` (default: a tenth of
  ``maxStepCount``); ``maxStepCount`` "If not defined, it will learn it from the completed trials"
  (here: their largest step). The emulator's overestimate is the trial's latest value plus its
  *steepest* improving slope between two measurements times the steps left to ``maxStepCount`` (a
  curve that is flat, or only worsens, gives no prediction: nothing is stopped). The service then
  adds "a last measurement [...] with max_num_steps and predicted objective value from the
  autoregression model"; the emulator has no such model: a stopped trial keeps the measurements it
  reported, as with the other rules. ``learningRateParameterName`` and ``updateAllStoppedTrials``
  tune the service's model and are not used. The proto's int64 fields have no presence: 0 reads as
  unset.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MIN_COMPLETED", "ConvexRule", "Curve", "decay_curve_should_stop", "median_should_stop"]

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


@dataclass(frozen=True)
class ConvexRule:
    """The convex rule of one ``convexAutomatedStoppingSpec`` (see the module doc); call it as the
    other rules."""

    #: ``maxStepCount``, or None: learned from the completed trials
    max_step: float | None = None
    #: ``minStepCount``, or None: a tenth of the max step
    min_step: float | None = None
    #: ``minMeasurementCount`` (default 5)
    min_measurements: int = 5

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> ConvexRule:
        """The rule of a v1 JSON ``convexAutomatedStoppingSpec`` (int64 fields as strings or numbers)."""

        def number(key: str) -> float | None:
            value = float(spec.get(key) or 0)
            return value if value > 0 else None

        return cls(number("maxStepCount"), number("minStepCount"), int(number("minMeasurementCount") or 5))

    def __call__(self, current: Curve, completed: Sequence[Curve], *, maximize: bool) -> bool:
        finished = [curve for curve in completed if curve]
        if len(finished) < self.min_measurements + 1 or len(current) < max(self.min_measurements, 2):
            return False
        max_step = self.max_step or max(step for curve in finished for step, _ in curve)
        min_step = self.min_step if self.min_step is not None else max_step / 10
        last_step, latest = current[-1]
        if not min_step < last_step < max_step:
            return False
        pairs = zip(current, current[1:], strict=False)
        slopes = [(v2 - v1) / (s2 - s1) for (s1, v1), (s2, v2) in pairs if s2 > s1]
        steepest = max(slopes, default=0.0) if maximize else -min(slopes, default=0.0)
        if not steepest > 0:
            return False  # flat (or only worsening): no prediction
        gain = steepest * (max_step - last_step)
        overestimate = latest + gain if maximize else latest - gain
        finals = [curve[-1][1] for curve in finished]
        best = max(finals) if maximize else min(finals)
        return _better(best, overestimate, maximize)
