"""What the job view shows, read from a job as the JobService returns it (v1 JSON, camelCase): the
pools, the state timeline, the replica keys and, for a tuning job, the trials and their charts (inline
SVG, drawn here: no script or asset from elsewhere). Pure functions over dicts: the same for Vertex AI
and the emulator."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from airflow_vertex_dist.common.trial_values import typed_parameters, whole_number_parameters
from airflow_vertex_dist.jobs.dicts import job_labels, job_spec, job_state, short_state
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES
from airflow_vertex_dist.jobs.replicas import expected_replicas, replica_count

__all__ = [
    "ENDED_STATES",
    "best_trial",
    "capacity_rung",
    "intermediate_chart",
    "is_running",
    "objective",
    "output_uri",
    "pools",
    "replica_keys",
    "timeline",
    "trial_chart",
    "trial_rows",
    "trial_value",
]

#: the states a job never leaves (v1 JobState): the jobs layer's set, under the name the view exports
ENDED_STATES = TERMINAL_STATES
#: the role of each worker pool, by index (Vertex AI's "Configure compute resources for custom
#: training": https://cloud.google.com/vertex-ai/docs/training/distributed-training)
_ROLES = ("primary", "workers", "parameter servers", "evaluators")
_RS_IMAGE = "/training/reductionserver"
_PALETTE = ("#0b62c4", "#1a7f37", "#9a6700", "#8250df", "#c62828", "#0a7f8f", "#bc4c00", "#57606a")


def is_running(job: Mapping[str, Any]) -> bool:
    """Whether the job has not ended yet (the view keeps refreshing)."""
    return job_state(job) not in ENDED_STATES


def capacity_rung(job: Mapping[str, Any]) -> str:
    """What a capacity ladder's job says of its rung (its ``airflow-rung`` label, the scheduling
    strategy and the region), or ``""`` for a job of no ladder."""
    from airflow_vertex_dist.hooks.labels import RUNG_LABEL

    rung = str(job_labels(job).get(RUNG_LABEL) or "")
    if not rung:
        return ""
    spec = job_spec(job)
    strategy = str((spec.get("scheduling") or {}).get("strategy") or "STANDARD")
    parts = str(job.get("name", "")).split("/")
    region = parts[3] if len(parts) > 3 and parts[2] == "locations" else ""
    where = f", in {region}" if region else ""
    return f"Capacity ladder: rung {rung.removeprefix('r')}, {strategy}{where}"


def pools(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per worker pool in use: ``pool``, ``role`` (pool 2 running the Reduction Server image:
    ``Reduction Server``), ``machine``, ``accelerators`` (``"2 x NVIDIA_TESLA_T4"`` or ``""``),
    ``replicas``, ``runs`` (image URI, or package URIs and module) and ``reduction_server``."""
    rows = []
    for index, pool in enumerate(job_spec(job).get("workerPoolSpecs") or []):
        if not pool:
            continue  # a skipped pool, kept in place as {}
        machine = pool.get("machineSpec") or {}
        accel = machine.get("acceleratorType")
        accelerators = f"{machine.get('acceleratorCount', 1)} x {accel}" if accel else ""
        container = pool.get("containerSpec") or {}
        package = pool.get("pythonPackageSpec") or {}
        if container:
            runs = str(container.get("imageUri", ""))
        else:
            uris = ", ".join(package.get("packageUris") or [])
            runs = f"{uris} ({package.get('pythonModule', '')} on {package.get('executorImageUri', '')})"
        reduction = index == 2 and _RS_IMAGE in str(container.get("imageUri", ""))
        rows.append(
            {
                "pool": f"workerpool{index}",
                "role": "Reduction Server" if reduction else _ROLES[index] if index < len(_ROLES) else "",
                "machine": str(machine.get("machineType", "")),
                "accelerators": accelerators,
                "replicas": replica_count(pool, field=f"workerPoolSpecs[{index}].replicaCount"),
                "runs": runs,
                "reduction_server": reduction,
            }
        )
    return rows


def replica_keys(job: Mapping[str, Any]) -> list[str]:
    """``workerpoolN-i`` for every replica of the job (of each trial, for a tuning job)."""
    return expected_replicas(job)


def _time(value: Any) -> datetime | None:
    from airflow_vertex_dist.ui.times import parse

    return parse(value)


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def timeline(job: Mapping[str, Any], now: datetime | None = None) -> list[dict[str, str]]:
    """The job's steps as the API dates them: ``created`` (createTime), ``running`` (startTime),
    ``ended`` (endTime, with the final state), each with its time and the time to the next step (to
    ``now`` for the last one while the job runs). The v1 job has no time for QUEUED or PENDING: the
    wait from created to running covers both."""
    steps = [("created", job.get("createTime")), ("running", job.get("startTime"))]
    if not is_running(job):
        steps.append((f"ended ({short_state(job_state(job))})", job.get("endTime")))
    rows: list[dict[str, str]] = []
    dated = [(step, value, _time(value)) for step, value in steps if value]
    for i, (step, value, when) in enumerate(dated):
        later = dated[i + 1][2] if i + 1 < len(dated) else (now if is_running(job) else None)
        took = _duration((later - when).total_seconds()) if when and later else ""
        rows.append({"step": step, "time": str(value), "duration": took})
    return rows


def output_uri(job: Mapping[str, Any]) -> str:
    """The job's ``baseOutputDirectory`` (``""`` when it names none)."""
    return str((job_spec(job).get("baseOutputDirectory") or {}).get("outputUriPrefix") or "")


def objective(job: Mapping[str, Any]) -> tuple[str, bool]:
    """The study's first metric id and whether it is maximized."""
    metrics = (job.get("studySpec") or {}).get("metrics") or [{}]
    first = metrics[0] or {}
    return str(first.get("metricId", "")), str(first.get("goal", "MAXIMIZE")) != "MINIMIZE"


def _metric(measurement: Mapping[str, Any] | None, metric: str) -> float | None:
    for item in (measurement or {}).get("metrics") or []:
        if item.get("metricId") == metric:
            try:
                return float(item.get("value"))
            except (TypeError, ValueError):
                return None
    return None


def trial_value(trial: Mapping[str, Any], metric: str) -> float | None:
    """The trial's final value of ``metric`` (None before it has one)."""
    return _metric(trial.get("finalMeasurement"), metric)


def best_trial(job: Mapping[str, Any]) -> str | None:
    """The id of the trial with the best final objective (the first of equals), None without one."""
    metric, maximize = objective(job)
    best: tuple[float, str] | None = None
    for trial in job.get("trials") or []:
        value = trial_value(trial, metric)
        if value is None:
            continue
        if best is None or (value > best[0] if maximize else value < best[0]):
            best = (value, str(trial.get("id", "")))
    return None if best is None else best[1]


def _frame(width: int, height: int, title: str, low: float, high: float, x_label: str) -> list[str]:
    pad = 40
    return [
        f"<svg xmlns='http://www.w3.org/2000/svg' role='img' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}'>",
        f"<title>{html.escape(title)}</title>",
        f"<line x1='{pad}' y1='{height - pad}' x2='{width - pad}' y2='{height - pad}' stroke='#888'/>",
        f"<line x1='{pad}' y1='{pad}' x2='{pad}' y2='{height - pad}' stroke='#888'/>",
        f"<text x='{pad}' y='{pad - 8}' font-size='11'>{high:g}</text>",
        f"<text x='{pad}' y='{height - pad + 14}' font-size='11'>{low:g}</text>",
        f"<text x='{width - pad}' y='{height - 8}' font-size='11' text-anchor='end'>"
        f"{html.escape(x_label)}</text>",
    ]


def trial_chart(job: Mapping[str, Any], *, width: int = 560, height: int = 240) -> str:
    """The objective per trial: one ``<circle class='trial'>`` per trial with a final value, in trial
    order, the best one ``class='trial best'`` (larger, orange), and the best-so-far ``<polyline
    class='best-so-far'>``. ``""`` when no trial has a value."""
    metric, maximize = objective(job)
    points = [
        (str(t.get("id", "")), v)
        for t in job.get("trials") or []
        if (v := trial_value(t, metric)) is not None
    ]
    if not points:
        return ""
    pad = 40
    values = [v for _, v in points]
    low, high = min(values), max(values)
    span = (high - low) or 1.0

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i / max(len(points) - 1, 1))

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * ((v - low) / span)

    best = best_trial(job)
    running: list[float] = []
    for v in values:
        running.append(v if not running else (max(running[-1], v) if maximize else min(running[-1], v)))
    goal = "maximize" if maximize else "minimize"
    parts = _frame(width, height, f"{metric} per trial ({goal})", low, high, "trial")
    parts.insert(0, "<figure class='chart' id='trial-chart'>")
    line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(running))
    parts.append(
        f"<polyline class='best-so-far' fill='none' stroke='#1a7f37' stroke-width='1.5' points='{line}'/>"
    )
    for i, (trial_id, v) in enumerate(points):
        is_best = trial_id == best
        parts.append(
            f"<circle class='{'trial best' if is_best else 'trial'}' cx='{x(i):.1f}' cy='{y(v):.1f}' "
            f"r='{7 if is_best else 4}' fill='{'#d97706' if is_best else '#0b62c4'}'>"
            f"<title>trial {html.escape(trial_id)}: {html.escape(metric)} = {v:g}"
            f"{' (best)' if is_best else ''}</title></circle>"
        )
    parts.append("</svg>")
    parts.append(
        f"<figcaption>{html.escape(metric)} ({goal}) of each trial, in trial order; green line: best so far; "
        f"large orange point: the best trial ({html.escape(str(best))}).</figcaption></figure>"
    )
    return "".join(parts)


def intermediate_chart(job: Mapping[str, Any], *, width: int = 560, height: int = 240) -> str:
    """The intermediate measurements of the objective per step, one ``<polyline class='trial-steps'>``
    per trial that reported any (the best trial's thicker); ``""`` when none did."""
    metric, _ = objective(job)
    best = best_trial(job)
    series: list[tuple[str, list[tuple[float, float]]]] = []
    for trial in job.get("trials") or []:
        steps: list[tuple[float, float]] = []
        for measurement in trial.get("measurements") or []:
            value = _metric(measurement, metric)
            if value is not None:
                steps.append((float(measurement.get("stepCount") or 0), value))
        if steps:
            series.append((str(trial.get("id", "")), sorted(steps)))
    if not series:
        return ""
    pad = 40
    xs = [s for _, pts in series for s, _ in pts]
    ys = [v for _, pts in series for _, v in pts]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    parts = _frame(width, height, f"{metric} per step, each trial", y0, y1, "step")
    parts.insert(0, "<figure class='chart' id='steps-chart'>")
    for n, (trial_id, pts) in enumerate(series):
        coords = " ".join(
            f"{pad + (width - 2 * pad) * ((s - x0) / ((x1 - x0) or 1)):.1f},"
            f"{height - pad - (height - 2 * pad) * ((v - y0) / ((y1 - y0) or 1)):.1f}"
            for s, v in pts
        )
        is_best = trial_id == best
        parts.append(
            f"<polyline class='trial-steps{' best' if is_best else ''}' fill='none' "
            f"stroke='{'#d97706' if is_best else _PALETTE[n % len(_PALETTE)]}' "
            f"stroke-width='{3 if is_best else 1.2}' points='{coords}'>"
            f"<title>trial {html.escape(trial_id)}</title></polyline>"
        )
    parts.append("</svg>")
    parts.append(
        f"<figcaption>{html.escape(metric)} reported at each step, one line per trial; thick orange: the "
        "best trial.</figcaption></figure>"
    )
    return "".join(parts)


def trial_rows(job: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per trial: id, state, parameters, final measurement, intermediate measurements (count
    and last step), ``stopping`` while the service stops the trial early (state STOPPING: once it
    ended, the v1 Trial keeps no mark of an early stop) and the infeasible reason."""
    metric, _ = objective(job)
    whole = whole_number_parameters(job.get("studySpec"))
    rows = []
    for trial in job.get("trials") or []:
        typed = typed_parameters(trial.get("parameters") or [], whole)
        params = ", ".join(
            f"{p.get('parameterId')}={p.get('value')}" for p in typed if isinstance(p, Mapping)
        )
        final = trial_value(trial, metric)
        measurements: Sequence[Mapping[str, Any]] = trial.get("measurements") or []
        steps = [str(m.get("stepCount", "")) for m in measurements]
        final_step = str((trial.get("finalMeasurement") or {}).get("stepCount", ""))
        rows.append(
            {
                "id": str(trial.get("id", "")),
                "state": str(trial.get("state", "")),
                "parameters": params,
                "final": ""
                if final is None
                else f"{final:g}" + (f" (step {final_step})" if final_step else ""),
                "intermediate": f"{len(steps)} (last step {steps[-1]})" if steps else "0",
                "stopped_early": "stopping" if trial.get("state") == "STOPPING" else "",
                "infeasible": str(trial.get("infeasibleReason", "")),
            }
        )
    return rows
