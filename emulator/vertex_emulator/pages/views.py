"""The emulator's web pages (routed by rest/web.py): a job's page, a replica's web access page and the
index of every job, rendered from the templates under ``templates/`` (``render.py``: autoescaped, so
every value is escaped). A page whose job has not ended (the index: while any listed job has not)
reloads itself every ``REFRESH_S`` seconds (a ``<meta http-equiv='refresh'>``, left out once the job
ended). A tuning job's page draws its trials as an inline SVG chart (``chart.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from vertex_emulator.pages.chart import trial_chart
from vertex_emulator.pages.render import render

__all__ = [
    "ENDED_STATES",
    "REFRESH_S",
    "index_page",
    "job_kind",
    "job_page",
    "output_directory",
    "replica_keys",
    "replica_page",
]

#: ``runner.replica_view``: a replica's state, pid, exit code, restarts, address and log tail
ReplicaView = Callable[[str, str], "dict[str, Any] | None"]
_KINDS = {"customJobs": "CustomJob", "hyperparameterTuningJobs": "HyperparameterTuningJob"}
#: the states a job never leaves (v1 JobState)
ENDED_STATES = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
    }
)
#: seconds between two reloads of a page whose job runs
REFRESH_S = 5


def replica_keys(job: dict[str, Any]) -> list[str]:
    """``workerpoolN-i`` for every replica of a CustomJob (or a tuning job's trial spec)."""
    spec = job.get("jobSpec") or job.get("trialJobSpec") or {}
    keys = []
    for index, pool in enumerate(spec.get("workerPoolSpecs") or []):
        for replica in range(int((pool or {}).get("replicaCount") or 0)):
            keys.append(f"workerpool{index}-{replica}")
    return keys


def _page(template: str, title: str, *, refresh: bool, **context: Any) -> bytes:
    """``template`` (extending ``base.html``) as the page's bytes."""
    return render(template, title=title, refresh=refresh, refresh_s=REFRESH_S, **context).encode()


def _running(job: dict[str, Any]) -> bool:
    return bool(job) and str(job.get("state", "")) not in ENDED_STATES


def replica_page(name: str, key: str, job: dict[str, Any], view: dict[str, Any]) -> bytes:
    """Replica ``key`` of job ``name``: its view as a table, then its log tail."""
    rows: list[tuple[str, Any]] = [("job", name), ("job state", job.get("state", ""))]
    log = ""
    for k, v in view.items():
        if "log" in k and isinstance(v, str | list):
            log = v if isinstance(v, str) else "\n".join(map(str, v))
        else:
            rows.append((k, v if not isinstance(v, dict | list) else json.dumps(v)))
    return _page(
        "replica.html", f"{key} of {name}", refresh=_running(job), rows=rows, log=log, job_path=quote(name)
    )


def output_directory(job: dict[str, Any], gcs_root: Path | None) -> tuple[str, str] | None:
    """The job's ``baseOutputDirectory`` URI and the local directory standing for it under
    ``gcs_root`` (``""`` when unknown or not a ``gs://`` URI); None when the job names none."""
    spec = job.get("jobSpec") or job.get("trialJobSpec") or {}
    uri = str((spec.get("baseOutputDirectory") or {}).get("outputUriPrefix") or "")
    if not uri:
        return None
    local = ""
    if gcs_root is not None and uri.startswith("gs://"):
        from vertex_emulator.core.gcs import to_local_path

        try:
            local = str(to_local_path(uri, gcs_root))
        except ValueError:
            local = ""
    return uri, local


def _pools(job: dict[str, Any]) -> list[tuple[str, str]]:
    """Each worker pool as (``workerpoolN``, what it runs on what)."""
    spec = job.get("jobSpec") or job.get("trialJobSpec") or {}
    pools = []
    for index, pool in enumerate(spec.get("workerPoolSpecs") or []):
        if not pool:
            pools.append((f"workerpool{index}", "(unused)"))
            continue
        machine = pool.get("machineSpec") or {}
        what = (pool.get("containerSpec") or {}).get("imageUri") or (pool.get("pythonPackageSpec") or {}).get(
            "pythonModule", ""
        )
        accel = machine.get("acceleratorType")
        shape = f"{machine.get('machineType', '')}" + (
            f" + {machine.get('acceleratorCount', 1)} x {accel}" if accel else ""
        )
        pools.append((f"workerpool{index}", f"{pool.get('replicaCount', 0)} x {shape} - {what}"))
    return pools


def _trial_rows(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Each trial's cells (id, state, parameters, final metrics, infeasible reason) and custom job."""
    rows = []
    for trial in job.get("trials") or []:
        params = ", ".join(f"{p.get('parameterId')}={p.get('value')}" for p in trial.get("parameters") or [])
        metrics = ", ".join(
            f"{m.get('metricId')}={m.get('value')}"
            for m in (trial.get("finalMeasurement") or {}).get("metrics") or []
        )
        backing = trial.get("customJob", "")
        cells = [
            trial.get("id", ""),
            trial.get("state", ""),
            params,
            metrics,
            trial.get("infeasibleReason", ""),
        ]
        rows.append(
            {"cells": cells, "custom_job": backing, "custom_job_path": quote(backing) if backing else ""}
        )
    return rows


def job_page(
    name: str, job: dict[str, Any], replica_view: ReplicaView, *, gcs_root: Path | None = None
) -> bytes:
    """Job ``name``: state and times, error, output directory, worker pools, replicas (with links),
    trials (a chart and a table)."""
    output = output_directory(job, gcs_root)
    where = None
    if output is not None:
        uri, local = output
        where = {"uri": uri, "local": local, "href": Path(local).as_uri() if local else ""}
    replicas = None
    if "jobSpec" in job:
        replicas = [
            {
                "path": f"{quote(name)}/{quote(key)}",
                "key": key,
                "state": (replica_view(name, key) or {}).get("state", ""),
            }
            for key in replica_keys(job)
        ]
    error = job.get("error")
    trials = _trial_rows(job)
    return _page(
        "job.html",
        job.get("displayName") or name,
        refresh=_running(job),
        name=name,
        job=job,
        labels=", ".join(f"{k}={v}" for k, v in sorted((job.get("labels") or {}).items())),
        error=json.dumps(error, indent=2) if error else "",
        output=where,
        pools=_pools(job),
        replicas=replicas,
        trials=trials,
        chart=trial_chart(job) if trials else "",
        running=_running(job),
    )


def job_kind(name: str) -> str:
    """``CustomJob`` or ``HyperparameterTuningJob``, from a job's resource name."""
    parts = name.split("/")
    collection = parts[-2] if len(parts) >= 2 else ""
    return _KINDS.get(collection, collection)


def index_page(jobs: Sequence[dict[str, Any]], *, limit: int) -> bytes:
    """Every job, finished ones too, newest first (at most ``limit``; ``jobs`` may hold one more, to
    say that older ones are left out): state, kind, create and end time, each linked to its page;
    then links to the call counts and the fault settings. It reloads itself while a listed job runs."""
    rows = []
    for job in jobs[:limit]:
        name = str(job.get("name", ""))
        rows.append(
            {
                "path": quote(name),
                "label": str(job.get("displayName") or name),
                "state": job.get("state", ""),
                "kind": job_kind(name),
                "created": job.get("createTime", ""),
                "ended": job.get("endTime", ""),
                "name": name,
            }
        )
    return _page(
        "index.html",
        "Vertex AI emulator",
        refresh=any(_running(job) for job in jobs[:limit]),
        rows=rows,
        more=len(jobs) > limit,
        limit=limit,
    )
