"""The emulator's web pages (served by rest.py): a job's page, a replica's web access page and the
index of every job. Plain HTML from the stored job and the runner's replica views; every value is
escaped.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

__all__ = ["index_page", "job_kind", "job_page", "replica_keys", "replica_page"]

#: ``runner.replica_view``: a replica's state, pid, exit code, restarts, address and log tail
ReplicaView = Callable[[str, str], "dict[str, Any] | None"]
_KINDS = {"customJobs": "CustomJob", "hyperparameterTuningJobs": "HyperparameterTuningJob"}


def replica_keys(job: dict[str, Any]) -> list[str]:
    """``workerpoolN-i`` for every replica of a CustomJob (or a tuning job's trial spec)."""
    spec = job.get("jobSpec") or job.get("trialJobSpec") or {}
    keys = []
    for index, pool in enumerate(spec.get("workerPoolSpecs") or []):
        for replica in range(int((pool or {}).get("replicaCount") or 0)):
            keys.append(f"workerpool{index}-{replica}")
    return keys


def _html_page(title: str, body: str) -> bytes:
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}"
        "pre{background:#f4f4f4;padding:1em;overflow:auto;max-height:40em}</style>"
        f"</head><body><h1>{html.escape(title)}</h1>{body}</body></html>"
    ).encode()


def _table(rows: list[tuple[str, Any]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"


def replica_page(name: str, key: str, job: dict[str, Any], view: dict[str, Any]) -> bytes:
    """Replica ``key`` of job ``name``: its view as a table, then its log tail."""
    rows: list[tuple[str, Any]] = [("job", name), ("job state", job.get("state", ""))]
    log = ""
    for k, v in view.items():
        if "log" in k and isinstance(v, str | list):
            log = v if isinstance(v, str) else "\n".join(map(str, v))
        else:
            rows.append((k, v if not isinstance(v, dict | list) else json.dumps(v)))
    body = _table(rows) + f"<h2>log tail</h2><pre>{html.escape(log)}</pre>"
    body += f"<p><a href='/ui/{quote(name)}'>job page</a></p>"
    return _html_page(f"{key} of {name}", body)


def job_page(name: str, job: dict[str, Any], replica_view: ReplicaView) -> bytes:
    """Job ``name``: state and times, error, worker pools, replicas (with links), trials."""
    parts = [
        _table(
            [
                ("name", name),
                ("display name", job.get("displayName", "")),
                ("state", job.get("state", "")),
                ("created", job.get("createTime", "")),
                ("started", job.get("startTime", "")),
                ("ended", job.get("endTime", "")),
                ("labels", ", ".join(f"{k}={v}" for k, v in sorted((job.get("labels") or {}).items()))),
            ]
        )
    ]
    error = job.get("error")
    if error:
        parts.append(f"<h2>error</h2><pre>{html.escape(json.dumps(error, indent=2))}</pre>")
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
    if pools:
        parts.append("<h2>worker pools</h2>" + _table(pools))
    if "jobSpec" in job:
        replicas = []
        for key in replica_keys(job):
            view = replica_view(name, key) or {}
            state = view.get("state", "")
            link = f"<a href='/web/{quote(name)}/{quote(key)}'>{html.escape(key)}</a>"
            replicas.append(f"<tr><td>{link}</td><td>{html.escape(str(state))}</td></tr>")
        parts.append(
            "<h2>replicas</h2><table><tr><th>replica</th><th>state</th></tr>" + "".join(replicas) + "</table>"
        )
    trials = job.get("trials") or []
    if trials:
        rows = []
        for trial in trials:
            params = ", ".join(
                f"{p.get('parameterId')}={p.get('value')}" for p in trial.get("parameters") or []
            )
            metrics = ", ".join(
                f"{m.get('metricId')}={m.get('value')}"
                for m in (trial.get("finalMeasurement") or {}).get("metrics") or []
            )
            backing = trial.get("customJob", "")
            link = f"<a href='/ui/{quote(backing)}'>{html.escape(backing)}</a>" if backing else ""
            cells = [
                trial.get("id", ""),
                trial.get("state", ""),
                params,
                metrics,
                trial.get("infeasibleReason", ""),
            ]
            rows.append(
                "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + f"<td>{link}</td></tr>"
            )
        parts.append(
            "<h2>trials</h2><table><tr><th>id</th><th>state</th><th>parameters</th><th>final metrics</th>"
            "<th>infeasible reason</th><th>custom job</th></tr>" + "".join(rows) + "</table>"
        )
    return _html_page(job.get("displayName") or name, "".join(parts))


def job_kind(name: str) -> str:
    """``CustomJob`` or ``HyperparameterTuningJob``, from a job's resource name."""
    parts = name.split("/")
    collection = parts[-2] if len(parts) >= 2 else ""
    return _KINDS.get(collection, collection)


def index_page(jobs: Sequence[dict[str, Any]], *, limit: int) -> bytes:
    """Every job, finished ones too, newest first (at most ``limit``; ``jobs`` may hold one more, to
    say that older ones are left out): state, kind, create and end time, each linked to its page;
    then links to the call counts and the fault settings."""
    rows = []
    for job in jobs[:limit]:
        name = str(job.get("name", ""))
        cells = [
            f"<a href='/ui/{quote(name)}'>{html.escape(str(job.get('displayName') or name))}</a>",
            *(
                html.escape(str(value))
                for value in (
                    job.get("state", ""),
                    job_kind(name),
                    job.get("createTime", ""),
                    job.get("endTime", ""),
                    name,
                )
            ),
        ]
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    more = f"<p>Only the {limit} newest jobs are listed.</p>" if len(jobs) > limit else ""
    body = (
        "<h2>jobs</h2><table><tr><th>job</th><th>state</th><th>kind</th><th>created</th><th>ended</th>"
        "<th>resource name</th></tr>" + "".join(rows) + "</table>" + more
    )
    if not rows:
        body = "<h2>jobs</h2><p>No job yet.</p>"
    body += "<p><a href='/emulator/stats'>call counts</a> | <a href='/emulator/faults'>fault settings</a></p>"
    return _html_page("Vertex AI emulator", body)
