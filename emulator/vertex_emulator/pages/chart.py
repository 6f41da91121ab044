"""A tuning job's trials as an inline SVG chart, drawn here (``templates/trial_chart.html``): the
objective of each trial in trial order, the best-so-far line, the best trial marked."""

from __future__ import annotations

from typing import Any

from vertex_emulator.pages.render import render

__all__ = ["trial_chart"]


def _objective(job: dict[str, Any]) -> tuple[str, bool]:
    """The study's first metric and whether it is maximized."""
    metrics = (job.get("studySpec") or {}).get("metrics") or [{}]
    first = metrics[0] or {}
    return str(first.get("metricId", "")), str(first.get("goal", "MAXIMIZE")) != "MINIMIZE"


def _final_value(trial: dict[str, Any], metric: str) -> float | None:
    for item in (trial.get("finalMeasurement") or {}).get("metrics") or []:
        if item.get("metricId") == metric and item.get("value") is not None:
            try:
                return float(item["value"])
            except (TypeError, ValueError):
                return None
    return None


def trial_chart(job: dict[str, Any], *, width: int = 560, height: int = 240) -> str:
    """An inline SVG: one point per trial with a final objective value, in trial order (x), the
    best-so-far line and the best trial drawn larger, in another colour (``class='best'``); ``""`` when
    no trial has a value yet. Markup the template built, every value of the job escaped there."""
    metric, maximize = _objective(job)
    points = [
        (str(trial.get("id", "")), value)
        for trial in job.get("trials") or []
        if (value := _final_value(trial, metric)) is not None
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

    best_index = max(range(len(points)), key=lambda i: values[i] if maximize else -values[i])
    running: list[float] = []
    for v in values:
        running.append(v if not running else (max(running[-1], v) if maximize else min(running[-1], v)))
    drawn = [
        {"id": trial_id, "x": f"{x(i):.1f}", "y": f"{y(v):.1f}", "value": f"{v:g}", "best": i == best_index}
        for i, (trial_id, v) in enumerate(points)
    ]
    return render(
        "trial_chart.html",
        width=width,
        height=height,
        pad=pad,
        metric=metric,
        maximize=maximize,
        high=f"{high:g}",
        low=f"{low:g}",
        line=" ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(running)),
        points=drawn,
        best_id=points[best_index][0],
    )
