"""The emulator's web pages (routed by rest/web.py): a job's page, a replica's web access page and the
index of every job. HTML from the stored job and the runner's replica views, with a little inline CSS
and no external asset; every value is escaped. A page whose job has not ended (the index: while any
listed job has not) reloads itself every ``REFRESH_S`` seconds (a ``<meta http-equiv='refresh'>``, left
out once the job ended). A tuning job's page draws its trials as an inline SVG chart, drawn here: the
objective of each trial in trial order, the best-so-far line, the best trial marked.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = [
    "ENDED_STATES",
    "REFRESH_S",
    "index_page",
    "job_kind",
    "job_page",
    "output_directory",
    "replica_keys",
    "replica_page",
    "trial_chart",
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
_CSS = (
    "body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#1d2630;background:#fff}"
    "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}"
    "table{border-collapse:collapse;margin:.4em 0}"
    "td,th{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}"
    "th{background:#f3f5f7}a{color:#0b62c4}"
    "pre{background:#f4f4f4;padding:1em;overflow:auto;max-height:40em}"
    ".state{font-weight:600}.SUCCEEDED{color:#1a7f37}.FAILED,.CANCELLED,.EXPIRED{color:#c62828}"
    ".RUNNING,.PENDING,.QUEUED,.ACTIVE{color:#9a6700}nav{margin-bottom:1em}"
    "svg{border:1px solid #d0d7de;background:#fcfcfd}"
)


def replica_keys(job: dict[str, Any]) -> list[str]:
    """``workerpoolN-i`` for every replica of a CustomJob (or a tuning job's trial spec)."""
    spec = job.get("jobSpec") or job.get("trialJobSpec") or {}
    keys = []
    for index, pool in enumerate(spec.get("workerPoolSpecs") or []):
        for replica in range(int((pool or {}).get("replicaCount") or 0)):
            keys.append(f"workerpool{index}-{replica}")
    return keys


def _html_page(title: str, body: str, *, refresh: bool = False) -> bytes:
    meta = f"<meta http-equiv='refresh' content='{REFRESH_S}'>" if refresh else ""
    nav = "<nav><a href='/ui/'>all jobs</a></nav>"
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"{meta}<title>{html.escape(title)}</title><style>{_CSS}</style>"
        f"</head><body>{nav}<h1>{html.escape(title)}</h1>{body}</body></html>"
    ).encode()


def _state(state: Any) -> str:
    text = str(state or "")
    short = text.removeprefix("JOB_STATE_")
    return f"<span class='state {html.escape(short)}'>{html.escape(text)}</span>"


def _table(rows: list[tuple[str, Any]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"


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
    body = _table(rows) + f"<h2>log tail</h2><pre>{html.escape(log)}</pre>"
    body += f"<p><a href='/ui/{quote(name)}'>job page</a></p>"
    return _html_page(f"{key} of {name}", body, refresh=_running(job))


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
    no trial has a value yet."""
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
    line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(running))
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' role='img' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' class='trial-chart'>",
        f"<title>{html.escape(metric)} per trial ({'maximize' if maximize else 'minimize'})</title>",
        f"<line x1='{pad}' y1='{height - pad}' x2='{width - pad}' y2='{height - pad}' stroke='#888'/>",
        f"<line x1='{pad}' y1='{pad}' x2='{pad}' y2='{height - pad}' stroke='#888'/>",
        f"<text x='{pad}' y='{pad - 8}' font-size='11'>{html.escape(metric)} {high:g}</text>",
        f"<text x='{pad}' y='{height - pad + 14}' font-size='11'>{low:g}</text>",
        f"<text x='{width - pad}' y='{height - 8}' font-size='11' text-anchor='end'>trial</text>",
        f"<polyline class='best-so-far' fill='none' stroke='#1a7f37' stroke-width='1.5' points='{line}'/>",
    ]
    for i, (trial_id, v) in enumerate(points):
        best = i == best_index
        parts.append(
            f"<circle class='{'trial best' if best else 'trial'}' cx='{x(i):.1f}' cy='{y(v):.1f}' "
            f"r='{7 if best else 4}' fill='{'#d97706' if best else '#0b62c4'}'>"
            f"<title>trial {html.escape(trial_id)}: {html.escape(metric)} = {v:g}"
            f"{' (best)' if best else ''}</title></circle>"
        )
    parts.append("</svg>")
    legend = (
        "<p>Points: each trial's final objective, in trial order; line: best so far; "
        f"larger orange point: the best trial ({html.escape(points[best_index][0])}).</p>"
    )
    return "".join(parts) + legend


def job_page(
    name: str, job: dict[str, Any], replica_view: ReplicaView, *, gcs_root: Path | None = None
) -> bytes:
    """Job ``name``: state and times, error, output directory, worker pools, replicas (with links),
    trials (a chart and a table)."""
    parts = [
        "<table>"
        + "".join(
            f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>"
            for k, v in (
                ("name", html.escape(name)),
                ("display name", html.escape(str(job.get("displayName", "")))),
                ("state", _state(job.get("state", ""))),
                ("created", html.escape(str(job.get("createTime", "")))),
                ("started", html.escape(str(job.get("startTime", "")))),
                ("ended", html.escape(str(job.get("endTime", "")))),
                (
                    "labels",
                    html.escape(", ".join(f"{k}={v}" for k, v in sorted((job.get("labels") or {}).items()))),
                ),
            )
        )
        + "</table>"
    ]
    error = job.get("error")
    if error:
        parts.append(f"<h2>error</h2><pre>{html.escape(json.dumps(error, indent=2))}</pre>")
    output = output_directory(job, gcs_root)
    if output is not None:
        uri, local = output
        where = f"<code>{html.escape(uri)}</code>"
        if local:
            where += f" = <a href='{html.escape(Path(local).as_uri())}'><code>{html.escape(local)}</code></a>"
        parts.append(f"<h2>output directory</h2><p class='output'>{where}</p>")
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
        chart = trial_chart(job)
        if chart:
            parts.append(f"<h2>trial chart</h2>{chart}")
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
    if _running(job):
        parts.append(f"<p class='refresh'>This page reloads every {REFRESH_S} s until the job ends.</p>")
    return _html_page(job.get("displayName") or name, "".join(parts), refresh=_running(job))


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
        cells = [
            f"<a href='/ui/{quote(name)}'>{html.escape(str(job.get('displayName') or name))}</a>",
            _state(job.get("state", "")),
            *(
                html.escape(str(value))
                for value in (
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
    return _html_page("Vertex AI emulator", body, refresh=any(_running(job) for job in jobs[:limit]))
