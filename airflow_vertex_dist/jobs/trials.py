"""Trial waits and the tuning outputs: the study's metric, the best trial, the trial summary.

Pure: no Airflow or Google imports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from airflow_vertex_dist.common.trial_values import typed_value, whole_number_parameters
from airflow_vertex_dist.jobs.dicts import error_suffix, job_state, short_state
from airflow_vertex_dist.jobs.events import Verdict
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES

__all__ = [
    "BestTrial",
    "Goal",
    "TrialCounts",
    "TrialRow",
    "TrialSummary",
    "best_trial",
    "check_trial_condition",
    "study_metric",
    "trial_condition",
    "trial_metric",
    "trial_summary",
]


#: The study's optimisation direction.
Goal = Literal["MAXIMIZE", "MINIMIZE"]


class BestTrial(TypedDict):
    """The succeeded trial with the best final metric in the study's direction (``best_trial``)."""

    id: str
    parameters: dict[str, Any]
    metric_id: str
    metric_value: float
    goal: Goal


class _TrialRowKeys(TypedDict):
    id: str
    state: str
    parameters: dict[str, Any]
    metric_value: float | None


class TrialRow(_TrialRowKeys, total=False):
    """One trial in a compact table: ``parameters`` maps each parameter id to its value;
    ``metric_value`` is the study metric's final value (``None`` without a final measurement);
    ``infeasible_reason`` only when the trial has one."""

    infeasible_reason: str


class TrialCounts(TypedDict):
    """How far a study got: ``total`` is ``maxTrialCount``; ``done`` = succeeded + infeasible."""

    total: int
    done: int
    succeeded: int
    infeasible: int
    active: int


class TrialSummary(TrialCounts):
    """``trial_summary``: the counts, the best trial so far and one row per trial."""

    best: BestTrial | None
    trials: list[TrialRow]


def study_metric(job: Mapping[str, Any]) -> tuple[str, Goal]:
    """``(metric_id, goal)`` of the study's first metric; goal is ``MAXIMIZE`` or ``MINIMIZE``."""
    study = job.get("studySpec")
    metrics = study.get("metrics") if isinstance(study, dict) else None
    if not metrics or not isinstance(metrics[0], dict):
        raise ValueError(f"job {job.get('name', '?')} has no studySpec.metrics: is it a tuning job?")
    metric = metrics[0]
    goal: Goal = "MINIMIZE" if str(metric.get("goal", "MAXIMIZE")).upper() == "MINIMIZE" else "MAXIMIZE"
    return str(metric.get("metricId", "")), goal


def _as_float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def trial_metric(trial: Mapping[str, Any], metric_id: str) -> float | None:
    """The trial's final value of ``metric_id`` (``None`` without a final measurement)."""
    measurement = trial.get("finalMeasurement")
    if not isinstance(measurement, dict):
        return None
    for metric in measurement.get("metrics") or []:
        if isinstance(metric, dict) and metric.get("metricId") == metric_id:
            return _as_float(metric.get("value"))
    return None


def _parameters(trial: Mapping[str, Any], whole: frozenset[str]) -> dict[str, Any]:
    """``{parameter_id: value}``; the ids in ``whole`` (integer parameters) with int values."""
    out: dict[str, Any] = {}
    for param in trial.get("parameters") or []:
        if isinstance(param, dict) and "parameterId" in param:
            pid = str(param["parameterId"])
            out[pid] = typed_value(param.get("value"), pid in whole)
    return out


def _trials(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [t for t in job.get("trials") or [] if isinstance(t, dict)]


def best_trial(job: Mapping[str, Any]) -> BestTrial | None:
    """The succeeded trial with the best final metric in the study's direction, as JSON.

    ``{"id", "parameters": {parameter_id: value}, "metric_id", "metric_value", "goal"}``; ties go to
    the earliest trial. ``None`` until a trial succeeded with a final measurement. An INTEGER
    parameter's value (and a DISCRETE one's listing whole numbers only) is an ``int``, as the study
    spec types it (``airflow_vertex_dist.common.trial_values``), not the protobuf double ``5.0``.
    """
    metric_id, goal = study_metric(job)
    best: tuple[float, dict[str, Any]] | None = None
    for trial in _trials(job):
        if trial.get("state") != "SUCCEEDED":
            continue
        value = trial_metric(trial, metric_id)
        if value is None:
            continue
        better = best is None or (value > best[0] if goal == "MAXIMIZE" else value < best[0])
        if better:
            best = (value, trial)
    if best is None:
        return None
    value, trial = best
    return {
        "id": str(trial.get("id", "")),
        "parameters": _parameters(trial, whole_number_parameters(job.get("studySpec"))),
        "metric_id": metric_id,
        "metric_value": value,
        "goal": goal,
    }


def trial_summary(job: Mapping[str, Any]) -> TrialSummary:
    """Counts and a compact table of the trials: what the progress log and XCom show.

    ``{"total": maxTrialCount, "done", "succeeded", "infeasible", "active", "best": best_trial(...),
    "trials": [{"id", "state", "parameters", "metric_value", "infeasible_reason"?}]}``
    """
    metric_id, _ = study_metric(job)
    whole = whole_number_parameters(job.get("studySpec"))
    trials = _trials(job)
    counts = {"SUCCEEDED": 0, "INFEASIBLE": 0}
    compact: list[TrialRow] = []
    for trial in trials:
        state = str(trial.get("state", "STATE_UNSPECIFIED"))
        if state in counts:
            counts[state] += 1
        row: TrialRow = {
            "id": str(trial.get("id", "")),
            "state": state,
            "parameters": _parameters(trial, whole),
            "metric_value": trial_metric(trial, metric_id),
        }
        if trial.get("infeasibleReason"):
            row["infeasible_reason"] = str(trial["infeasibleReason"])
        compact.append(row)
    done = counts["SUCCEEDED"] + counts["INFEASIBLE"]
    try:
        total = int(job.get("maxTrialCount", len(trials)))
    except (TypeError, ValueError):
        total = len(trials)
    return {
        "total": total,
        "done": done,
        "succeeded": counts["SUCCEEDED"],
        "infeasible": counts["INFEASIBLE"],
        "active": len(trials) - done,
        "best": best_trial(job),
        "trials": compact,
    }


def check_trial_condition(min_succeeded: int | None, metric_threshold: float | None) -> None:
    """Argument check, at DAG-parse time."""
    if min_succeeded is None and metric_threshold is None:
        raise ValueError("min_succeeded, metric_threshold: set at least one of them")
    if min_succeeded is not None and (isinstance(min_succeeded, bool) or int(min_succeeded) < 1):
        raise ValueError(f"min_succeeded: must be a positive integer (got {min_succeeded!r})")
    if metric_threshold is not None and _as_float(metric_threshold) is None:
        raise ValueError(f"metric_threshold: must be a finite number (got {metric_threshold!r})")


def trial_condition(
    job: Mapping[str, Any], *, min_succeeded: int | None = None, metric_threshold: float | None = None
) -> Verdict | None:
    """Success once ``min_succeeded`` trials succeeded or the best metric crossed the threshold.

    "Crossed" follows the study's goal: ``>= threshold`` when maximizing, ``<= threshold`` when
    minimizing. Error when the job ended before either happened.
    """
    check_trial_condition(min_succeeded, metric_threshold)
    name = job.get("name", "?")
    try:
        summary = trial_summary(job)
    except ValueError as exc:
        return Verdict("error", str(exc))
    best = summary["best"]
    if min_succeeded is not None and summary["succeeded"] >= min_succeeded:
        return Verdict("success", f"{summary['succeeded']} trials succeeded (wanted {min_succeeded})")
    if metric_threshold is not None and best is not None:
        value = float(best["metric_value"])
        crossed = value >= metric_threshold if best["goal"] == "MAXIMIZE" else value <= metric_threshold
        if crossed:
            side = ">=" if best["goal"] == "MAXIMIZE" else "<="
            return Verdict(
                "success",
                f"trial {best['id']}: {best['metric_id']}={value:g} {side} {metric_threshold:g}",
            )
    state = job_state(job)
    if state in TERMINAL_STATES:
        best_text = (
            f"; best {best['metric_id']}={float(best['metric_value']):g} (trial {best['id']})" if best else ""
        )
        return Verdict(
            "error",
            f"job {name} ended {short_state(state)} with {summary['succeeded']} succeeded trials"
            f"{best_text}{error_suffix(job)}",
        )
    return None
