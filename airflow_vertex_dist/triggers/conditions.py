"""What the job, replica and trial waits look for: pure (v1 JSON job dicts in, verdicts out).

No Airflow or Google imports, so the sensors' ``poke``, the triggers, the operators' progress log and
their XCom outputs all share it without import cycles:

- :func:`job_condition`: the job reached one of the target states; fails fast on a failure state.
- :func:`replica_condition`: named replicas (``workerpool0-0``) or whole pools (``workerpool1-*``) are
  up, read from ``webAccessUris`` (the only per-replica view the API gives); an error when the job
  lacks ``enableWebAccess`` or a name matches no replica of the job; fails when the job ends first.
- :func:`trial_condition`: at least ``min_succeeded`` trials succeeded, or the best final metric
  crossed ``metric_threshold`` in the study's direction; fails when the job ends first.
- :class:`ProgressLog`: the progress lines for the task log (state changes, replicas up k/n, trials
  done k/N with the best so far).

Each condition returns a :class:`Verdict` (``None`` while the condition is still pending). The job-state
sets live in :mod:`airflow_vertex_dist.hooks.job_dicts`.
"""

from __future__ import annotations

import datetime
import fnmatch
import math
import time
from collections.abc import Iterable, Sequence
from typing import Any, Literal, NamedTuple

from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.hooks.job_dicts import (
    ACTIVE_STATES,
    PARTIAL_SUCCESS,
    TERMINAL_STATES,
    check_wait_settings,
    compact_job,
    error_suffix,
    job_state,
    short_state,
)

__all__ = [
    "PARTIAL_SUCCESS",
    "PausedClock",
    "ProgressLog",
    "Verdict",
    "best_trial",
    "cancel_outcome",
    "check_replica_names",
    "check_trial_condition",
    "check_wait_settings",
    "expected_replicas",
    "job_event",
    "job_condition",
    "normalize_state",
    "read_event",
    "replica_condition",
    "replicas_up",
    "resolve_replicas",
    "study_metric",
    "trial_condition",
    "trial_metric",
    "trial_summary",
    "web_access_enabled",
]

_ALL_STATES = ACTIVE_STATES | TERMINAL_STATES
_REPLICA_RE = LazyRegex(r"^workerpool([0-3])-(\d+|\*)$")


class Verdict(NamedTuple):
    """The end of a wait: ``success`` or ``error``, with a message for the task log.

    A ``NamedTuple``, not a frozen dataclass: this module is imported when a DAG file builds an
    operator, and a frozen dataclass costs about a millisecond to create (its methods are generated
    and compiled at import); a ``NamedTuple`` a tenth of that."""

    status: Literal["success", "error"]
    message: str

    @property
    def ok(self) -> bool:
        return self.status == "success"


def read_event(event: Any) -> tuple[Verdict, dict[str, Any] | None]:
    """Check a trigger event's payload as a resumed task gets it: ``(verdict, compact job or None)``.

    ``ValueError`` when it is not ``{"status": "success" | "error", "message", "job"}`` or a success
    event does not carry the job.
    """
    if not isinstance(event, dict) or event.get("status") not in ("success", "error"):
        raise ValueError(f"event: expected {{'status': 'success'|'error', ...}} (got {event!r})")
    job = event.get("job")
    if event["status"] == "success" and not (isinstance(job, dict) and job.get("name")):
        raise ValueError(f"event: a success event carries the job (got {event!r})")
    verdict = Verdict(event["status"], str(event.get("message") or ""))
    return verdict, job if isinstance(job, dict) else None


def normalize_state(state: str, *, field: str = "target_states") -> str:
    """``"succeeded"`` / ``"SUCCEEDED"`` / ``"JOB_STATE_SUCCEEDED"`` -> ``"JOB_STATE_SUCCEEDED"``."""
    text = str(state).strip().upper()
    full = text if text.startswith("JOB_STATE_") else f"JOB_STATE_{text}"
    if full not in _ALL_STATES:
        known = ", ".join(sorted(s.removeprefix("JOB_STATE_") for s in _ALL_STATES))
        raise ValueError(f"{field}: {state!r} is not a job state (one of {known})")
    return full


# ---------------------------------------------------------------------------------------------- jobs


def job_condition(
    job: dict[str, Any], target_states: Iterable[str], failure_states: Iterable[str] | None = None
) -> Verdict | None:
    """Success once the job is in a target state; error on a failure state (fail fast).

    ``failure_states`` defaults to every terminal state that is not a target: a job that ended
    anywhere else can never reach a target any more.
    """
    targets = {normalize_state(s) for s in target_states}
    failures = (
        {normalize_state(s, field="failure_states") for s in failure_states}
        if failure_states is not None
        else set(TERMINAL_STATES) - targets
    )
    state = job_state(job)
    name = job.get("name", "?")
    if state in targets:
        return Verdict("success", f"job {name} is {short_state(state)}")
    if state in failures:
        return Verdict("error", f"job {name} ended {short_state(state)}{error_suffix(job)}")
    return None


# ------------------------------------------------------------------------------------------ replicas


def _job_spec(job: dict[str, Any]) -> dict[str, Any]:
    """The CustomJobSpec of a custom job, or the trial job spec of a tuning job."""
    for key in ("jobSpec", "trialJobSpec"):
        spec = job.get(key)
        if isinstance(spec, dict):
            return spec
    return {}


def web_access_enabled(job: dict[str, Any]) -> bool:
    return bool(_job_spec(job).get("enableWebAccess"))


def expected_replicas(job: dict[str, Any]) -> list[str]:
    """Every replica key of the job, in pool order: ``workerpool0-0``, ``workerpool1-0``, ..."""
    keys: list[str] = []
    pools = _job_spec(job).get("workerPoolSpecs") or []
    for index, pool in enumerate(pools):
        if not isinstance(pool, dict) or not pool:
            continue  # an empty pool keeps the positions of the following ones
        try:
            count = int(pool.get("replicaCount", 1 if index == 0 else 0))
        except (TypeError, ValueError):
            count = 0
        keys.extend(f"workerpool{index}-{i}" for i in range(count))
    return keys


def replicas_up(job: dict[str, Any]) -> set[str]:
    """Replica keys that have a web access URI, i.e. are up."""
    uris = job.get("webAccessUris")
    return set(uris) if isinstance(uris, dict) else set()


def check_replica_names(replicas: Sequence[str], *, field: str = "replicas") -> list[str]:
    """Syntax check, at DAG-parse time: ``workerpool<0-3>-<index>`` or ``workerpool<0-3>-*``."""
    if isinstance(replicas, str):
        replicas = [replicas]
    names = [str(r).strip() for r in replicas]
    if not names:
        raise ValueError(f"{field}: name at least one replica (workerpool1-0) or pool (workerpool1-*)")
    for i, name in enumerate(names):
        if not _REPLICA_RE.match(name):
            raise ValueError(
                f"{field}[{i}]: {name!r} is not a replica name: use workerpool<0-3>-<index> "
                "or workerpool<0-3>-* for a whole pool"
            )
    return names


def resolve_replicas(job: dict[str, Any], replicas: Sequence[str], *, field: str = "replicas") -> list[str]:
    """Expand pool patterns against the job's pools; error when a name matches none of its replicas."""
    expected = expected_replicas(job)
    resolved: list[str] = []
    for i, name in enumerate(check_replica_names(replicas, field=field)):
        matches = [key for key in expected if fnmatch.fnmatchcase(key, name)]
        if not matches:
            have = ", ".join(expected) or "none"
            raise ValueError(
                f"{field}[{i}]: {name!r} matches no replica of job {job.get('name', '?')} (it has: {have})"
            )
        resolved.extend(key for key in matches if key not in resolved)
    return resolved


def replica_condition(job: dict[str, Any], replicas: Sequence[str]) -> Verdict | None:
    """Success once every wanted replica is up; error when the job cannot show it or ended first."""
    name = job.get("name", "?")
    if "/hyperparameterTuningJobs/" in str(name):
        return Verdict(
            "error",
            f"job {name} is a tuning job: its replicas belong to its trials; wait on a trial's "
            "CustomJob (trials[].customJob) instead",
        )
    if not web_access_enabled(job):
        return Verdict(
            "error",
            f"job {name} was created without enableWebAccess: replicas are visible only through "
            "webAccessUris, so set enable_web_access=True on the spec to wait for them",
        )
    try:
        wanted = resolve_replicas(job, replicas)
    except ValueError as exc:
        return Verdict("error", str(exc))
    up = replicas_up(job)
    missing = [key for key in wanted if key not in up]
    if not missing:
        return Verdict("success", f"replicas up {len(wanted)}/{len(wanted)}: {', '.join(wanted)}")
    state = job_state(job)
    if state in TERMINAL_STATES:
        return Verdict(
            "error",
            f"job {name} ended {short_state(state)} before replicas {', '.join(missing)} were up"
            f"{error_suffix(job)}",
        )
    return None


# -------------------------------------------------------------------------------------------- trials


def study_metric(job: dict[str, Any]) -> tuple[str, str]:
    """``(metric_id, goal)`` of the study's first metric; goal is ``MAXIMIZE`` or ``MINIMIZE``."""
    study = job.get("studySpec")
    metrics = study.get("metrics") if isinstance(study, dict) else None
    if not metrics or not isinstance(metrics[0], dict):
        raise ValueError(f"job {job.get('name', '?')} has no studySpec.metrics: is it a tuning job?")
    metric = metrics[0]
    goal = str(metric.get("goal", "MAXIMIZE")).upper()
    if goal not in ("MAXIMIZE", "MINIMIZE"):
        goal = "MAXIMIZE"
    return str(metric.get("metricId", "")), goal


def _as_float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def trial_metric(trial: dict[str, Any], metric_id: str) -> float | None:
    """The trial's final value of ``metric_id`` (``None`` without a final measurement)."""
    measurement = trial.get("finalMeasurement")
    if not isinstance(measurement, dict):
        return None
    for metric in measurement.get("metrics") or []:
        if isinstance(metric, dict) and metric.get("metricId") == metric_id:
            return _as_float(metric.get("value"))
    return None


def _parameters(trial: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for param in trial.get("parameters") or []:
        if isinstance(param, dict) and "parameterId" in param:
            out[str(param["parameterId"])] = param.get("value")
    return out


def _trials(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in job.get("trials") or [] if isinstance(t, dict)]


def best_trial(job: dict[str, Any]) -> dict[str, Any] | None:
    """The succeeded trial with the best final metric in the study's direction, as JSON.

    ``{"id", "parameters": {parameter_id: value}, "metric_id", "metric_value", "goal"}``; ties go to
    the earliest trial. ``None`` until a trial succeeded with a final measurement.
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
        "parameters": _parameters(trial),
        "metric_id": metric_id,
        "metric_value": value,
        "goal": goal,
    }


def trial_summary(job: dict[str, Any]) -> dict[str, Any]:
    """Counts and a compact table of the trials: what the progress log and XCom show.

    ``{"total": maxTrialCount, "done", "succeeded", "infeasible", "active", "best": best_trial(...),
    "trials": [{"id", "state", "parameters", "metric_value", "infeasible_reason"?}]}``
    """
    metric_id, _ = study_metric(job)
    trials = _trials(job)
    counts = {"SUCCEEDED": 0, "INFEASIBLE": 0}
    compact: list[dict[str, Any]] = []
    for trial in trials:
        state = str(trial.get("state", "STATE_UNSPECIFIED"))
        if state in counts:
            counts[state] += 1
        row: dict[str, Any] = {
            "id": str(trial.get("id", "")),
            "state": state,
            "parameters": _parameters(trial),
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
    job: dict[str, Any], *, min_succeeded: int | None = None, metric_threshold: float | None = None
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


# ------------------------------------------------------------------------------------------ progress


class ProgressLog:
    """The progress lines of one job worth logging: what changed since the previous poll.

    State changes (``job ...: QUEUED -> RUNNING``), replicas up k/n (from ``webAccessUris``, when the
    job has ``enableWebAccess``) and, for a study, trials done k/N with the best metric so far. Fed
    every job dict a wait sees (the operators' polls, the triggers' updates), so a long wait does not
    flood the log.
    """

    def __init__(self) -> None:
        self.state: str | None = None
        self.replicas: tuple[int, int] | None = None
        self.trials: tuple[int, int, str | None] | None = None

    def update(self, job: dict[str, Any]) -> list[str]:
        lines: list[str] = []
        state = job_state(job)
        if state != self.state:
            before = "submitted" if self.state is None else short_state(self.state)
            lines.append(f"job {job.get('name', '?')}: {before} -> {short_state(state)}")
            self.state = state
        if "jobSpec" in job and web_access_enabled(job):
            expected = expected_replicas(job)
            up = [key for key in expected if key in replicas_up(job)]
            counts = (len(up), len(expected))
            if counts != self.replicas:
                lines.append(f"replicas up {counts[0]}/{counts[1]}" + (f": {', '.join(up)}" if up else ""))
                self.replicas = counts
        if "studySpec" in job:
            try:
                summary = trial_summary(job)
            except ValueError:  # a study without metrics: nothing to count (the wait reports it)
                return lines
            best = summary["best"]
            best_text = f"{best['metric_id']}={best['metric_value']:g} (trial {best['id']})" if best else None
            key = (summary["done"], summary["total"], best_text)
            if key != self.trials:
                line = f"trials done {summary['done']}/{summary['total']}"
                line += f" (succeeded {summary['succeeded']}, infeasible {summary['infeasible']}"
                line += f", active {summary['active']})"
                if best_text:
                    line += f"; best {best_text}"
                lines.append(line)
                self.trials = key
        return lines


# ------------------------------------------------- the wait rules shared by the trigger and operators



_RFC3339 = LazyRegex(
    r"^(?P<seconds>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(?P<fraction>\d+))?(?P<offset>[Zz]|[+-]\d\d:\d\d)$"
)


def _seconds_since(rfc3339: object) -> float | None:
    """Seconds from an API time (``2026-01-02T03:04:05.123456789Z``) to now, or ``None``."""
    if not isinstance(rfc3339, str):
        return None
    match = _RFC3339.match(rfc3339)
    if match is None:
        return None
    fraction = (match["fraction"] or "")[:6].ljust(6, "0")
    offset = "+00:00" if match["offset"] in ("Z", "z") else match["offset"]
    when = datetime.datetime.fromisoformat(f"{match['seconds']}.{fraction}{offset}")
    return (datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()


def job_event(
    job: dict[str, Any],
    *,
    partial_success: str = "fail",
    paused_for_s: float | None = None,
    paused_grace: float = 0.0,
) -> dict[str, Any] | None:
    """The event payload for a job in a final (for the task) state, ``None`` while it should wait."""
    name = job.get("name", "?")
    state = job_state(job)
    detail = error_suffix(job)
    if state == "JOB_STATE_SUCCEEDED":
        return {"status": "success", "message": f"job {name} succeeded", "job": compact_job(job)}
    if state == "JOB_STATE_FAILED":
        message = f"job {name} failed{detail or ' (no error message)'}"
    elif state == "JOB_STATE_CANCELLED":
        message = f"job {name} was cancelled{detail}"
    elif state == "JOB_STATE_EXPIRED":
        message = f"job {name} expired before it could run{detail}"
    elif state == "JOB_STATE_PARTIALLY_SUCCEEDED":
        ok = partial_success == "succeed"
        how = "accepted: partial_success='succeed'" if ok else "a failure: partial_success='fail'"
        return {
            "status": "success" if ok else "error",
            "message": f"job {name} PARTIALLY_SUCCEEDED ({how}){detail}",
            "job": compact_job(job),
        }
    elif state == "JOB_STATE_PAUSED" and paused_for_s is not None and paused_for_s >= paused_grace:
        message = f"job {name} stayed PAUSED for {paused_for_s:.0f}s (grace {paused_grace:g}s)"
    elif state in TERMINAL_STATES:  # pragma: no cover - every terminal state is listed above
        message = f"job {name} ended in {state}{detail}"
    else:
        return None
    return {"status": "error", "message": message, "job": compact_job(job)}


class PausedClock:
    """How long a job has been PAUSED, for the grace check of a wait (trigger or polling operator).

    The longer of: since this wait first saw it paused, and since the job's last update (which
    survives a triggerer restart or a retried task re-attaching to a job paused long ago).
    """

    def __init__(self) -> None:
        self._since: float | None = None

    def paused_for(self, job: dict[str, Any]) -> float | None:
        """Seconds the job has been paused, or ``None`` when it is not PAUSED."""
        if job_state(job) != "JOB_STATE_PAUSED":
            self._since = None
            return None
        now = time.monotonic()
        self._since = now if self._since is None else self._since
        return max(now - self._since, _seconds_since(job.get("updateTime")) or 0.0)


def cancel_outcome(cancel_on_kill: bool, cancelled: bool, *, left: str = "running") -> str:
    """What became of the job when a task gave up on it, appended to the task's failure message."""
    if not cancel_on_kill:
        return f"; the job was left {left} (cancel_on_kill=False)"
    return "; the job was cancelled" if cancelled else "; cancelling the job failed"
