"""The XCom values of the operators and sensors: JSON only, small, stable keys.

``job_output``: ``name``, ``id``, ``kind``, ``display_name``, ``state``, ``create_time``, ``start_time``,
``end_time``, ``console_url``, ``error`` (``{"code", "message"}`` or ``None``).

``tuning_output`` adds ``best_trial`` (``{"id", "parameters", "metric_id", "metric_value", "goal"}`` or
``None``; the best in the study's direction) and ``trials`` (one compact row per trial:
``{"id", "state", "parameters", "metric_value"}``, plus ``infeasible_reason`` when set).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_vertex_dist.links import LINK_XCOM_KEY

__all__ = ["LINK_XCOM_KEY", "job_output", "tuning_output"]


def _kind(name: str) -> str:
    parts = name.split("/")
    return parts[-2] if len(parts) >= 2 else ""


def job_output(job: Mapping[str, Any], console_url: str) -> dict[str, Any]:
    name = str(job.get("name", ""))
    error = job.get("error")
    return {
        "name": name,
        "id": name.rsplit("/", 1)[-1],
        "kind": _kind(name),
        "display_name": job.get("displayName"),
        "state": job.get("state"),
        "create_time": job.get("createTime"),
        "start_time": job.get("startTime"),
        "end_time": job.get("endTime"),
        "console_url": console_url,
        "error": (
            {"code": int(error.get("code", 0)), "message": str(error.get("message", ""))}
            if isinstance(error, dict) and error
            else None
        ),
    }


def tuning_output(job: Mapping[str, Any], console_url: str) -> dict[str, Any]:
    from airflow_vertex_dist.triggers.conditions.trials import trial_summary  # not needed at parse time

    summary = trial_summary(job)
    out = job_output(job, console_url)
    out["trial_counts"] = {
        key: summary[key] for key in ("total", "done", "succeeded", "infeasible", "active")
    }
    out["best_trial"] = summary["best"]
    out["trials"] = summary["trials"]
    return out
