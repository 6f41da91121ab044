"""What the view shows first of a tuning job, above its charts: the study's metric and goal, its search
algorithm, how many trials ended of the most it may run (``k/N``), how many run, and its best trial
(id, value, parameters). Pure, over the job as the JobService returns it (v1 JSON)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_vertex_dist.ui import model

__all__ = ["study_facts"]

#: a trial's states that are over (v1 Trial.State)
_ENDED = frozenset({"SUCCEEDED", "INFEASIBLE"})


def study_facts(job: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(label, value)`` pairs, in the order the page shows them."""
    metric, maximize = model.objective(job)
    spec = job.get("studySpec") or {}
    trials = [t for t in job.get("trials") or [] if isinstance(t, Mapping)]
    ended = sum(1 for t in trials if t.get("state") in _ENDED)
    active = sum(1 for t in trials if t.get("state") in ("ACTIVE", "REQUESTED", "STOPPING"))
    total = job.get("maxTrialCount") or len(trials)
    algorithm = str(spec.get("algorithm") or "ALGORITHM_UNSPECIFIED")
    if algorithm == "ALGORITHM_UNSPECIFIED":
        algorithm = "Bayesian optimization (the service's default)"
    best_id = model.best_trial(job)
    best = "none yet"
    if best_id is not None:
        row = next(r for r in model.trial_rows(job) if r["id"] == best_id)
        best = f"trial {best_id}: {metric} = {row['final']}" + (
            f" ({row['parameters']})" if row["parameters"] else ""
        )
    parallel = job.get("parallelTrialCount")
    running = f", {active} running" if active else ""
    return [
        ("metric", f"{metric} ({'maximize' if maximize else 'minimize'})"),
        ("algorithm", algorithm),
        ("trials", f"{ended}/{total} ended{running}" + (f", {parallel} at a time" if parallel else "")),
        ("best trial", best),
    ]
