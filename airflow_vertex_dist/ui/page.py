"""The job view's HTML: one page per task instance's job, with inline CSS and an inline script (a
severity filter, a refresh of the page's ``<main>`` every ``REFRESH_S`` seconds while the job runs,
and the links out of Airflow's frame); the charts are inline SVG (``model.py``). Nothing is loaded
from elsewhere. Every value is escaped.

Airflow's UI shows an external view in a sandboxed iframe (``allow-scripts allow-same-origin
allow-forms allow-downloads``: no ``allow-top-navigation``, no ``allow-popups``), where a link can
neither replace the page (``target=_top``) nor open a tab (``target=_blank``). The view is served by
the same origin as the UI, so the script follows such a link (``http`` or ``https`` only) from the
top document instead.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from airflow_vertex_dist.common.log_severity import SEVERITIES
from airflow_vertex_dist.ui import model

__all__ = ["REFRESH_S", "SEVERITY_RANK", "JobPage", "LogView", "index_page", "job_page", "main_section"]

#: seconds between two refreshes of a page whose job runs
REFRESH_S = 10
#: Cloud Logging's severities, in order (LogSeverity): the ones the logs hook and poller use
SEVERITY_RANK = SEVERITIES
_CSS = (
    "body{font-family:system-ui,sans-serif;margin:1em 1.5em;color:#1d2630;background:#fff;font-size:14px}"
    "h1{font-size:1.3em;margin:.2em 0}h2{font-size:1.05em;margin:1.4em 0 .4em}"
    "table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;"
    "vertical-align:top}th{background:#f3f5f7}a{color:#0b62c4}nav a{margin-right:1em}"
    ".state{font-weight:600}.SUCCEEDED{color:#1a7f37}.FAILED,.CANCELLED,.EXPIRED{color:#c62828}"
    ".RUNNING,.PENDING,.QUEUED,.CANCELLING{color:#9a6700}.error{color:#c62828}"
    ".replica{margin:.6em 0}.replica h3{font-size:.95em;margin:.2em 0}"
    "ol.log{list-style:none;margin:0;padding:.4em;background:#f6f8fa;font-family:monospace;font-size:12px;"
    "max-height:16em;overflow:auto}ol.log li{white-space:pre-wrap}"
    ".sev-DEBUG,.sev-DEFAULT{color:#57606a}.sev-INFO,.sev-NOTICE{color:#1d2630}.sev-WARNING{color:#9a6700}"
    ".sev-ERROR,.sev-CRITICAL,.sev-ALERT,.sev-EMERGENCY{color:#c62828;font-weight:600}"
    "tr.best{background:#fff4e5}figure{margin:.6em 0}svg{border:1px solid #d0d7de;background:#fcfcfd}"
    ".note{color:#57606a}"
)
_SCRIPT = """(function(){
var R=%d;
function apply(){var s=document.getElementById('severity');var min=s?+s.value:0;
document.querySelectorAll('ol.log li').forEach(function(li){li.hidden=(+li.dataset.rank)<min;});}
function tick(){var m=document.querySelector('main');if(!m||m.dataset.running!=='1')return;
fetch(location.pathname+'?fragment=1',{credentials:'same-origin'}).then(function(r){
if(!r.ok)throw new Error(r.status);return r.text();}).then(function(t){
document.querySelector('main').outerHTML=t;apply();setTimeout(tick,R*1000);
}).catch(function(){setTimeout(tick,R*1000);});}
function follow(e){var a=e.target.closest?e.target.closest('a[target]'):null;
if(!a||window.top===window||!/^https?:$/.test(a.protocol))return;
var d;try{d=window.top.document;}catch(x){return;}
e.preventDefault();var b=d.createElement('a');b.href=a.href;b.target=a.target;b.rel=a.rel;
d.body.appendChild(b);b.click();b.remove();}
document.addEventListener('click',follow);
document.addEventListener('DOMContentLoaded',function(){var s=document.getElementById('severity');
if(s)s.addEventListener('change',apply);apply();setTimeout(tick,R*1000);});
})();"""


@dataclass
class LogView:
    """The recent log lines of a job's replicas, as the view shows them: ``lines`` by replica key
    (``trial <id> / workerpoolN-i`` for a trial's), each ``(severity, timestamp, text)``; ``note``
    says when they were read or why not."""

    lines: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    note: str = ""


@dataclass
class JobPage:
    """What one page shows: the job, where it came from, and its links."""

    job: Mapping[str, Any]
    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    console_url: str
    task_log_url: str
    output_url: str
    logs: LogView


def _state(state: Any) -> str:
    text = str(state or "")
    return f"<span class='state {html.escape(text.removeprefix('JOB_STATE_'))}'>{html.escape(text)}</span>"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], classes: Sequence[str] = ()) -> str:
    """A table; ``rows`` hold HTML already escaped."""
    out = ["<table><tr>", *(f"<th>{html.escape(h)}</th>" for h in head), "</tr>"]
    for i, row in enumerate(rows):
        cls = f" class='{classes[i]}'" if i < len(classes) and classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _e(value: Any) -> str:
    return html.escape(str(value))


def main_section(page: JobPage) -> str:
    """The page's ``<main>``: what the refresh replaces (``data-running='1'`` while the job runs)."""
    job = page.job
    parts = [f"<main data-running='{1 if model.is_running(job) else 0}'>"]
    parts.append(f"<h1>{_e(job.get('displayName') or job.get('name', ''))} {_state(job.get('state'))}</h1>")
    parts.append(f"<p class='note'>{_e(job.get('name', ''))}</p>")
    links = []
    if page.console_url:
        links.append(
            f"<a id='console-link' href='{_e(page.console_url)}' target='_blank' rel='noopener'>job page</a>"
        )
    links.append(f"<a id='task-log-link' href='{_e(page.task_log_url)}' target='_top'>task log</a>")
    uri = model.output_uri(job)
    if uri:
        target = (
            f"<a id='output-link' href='{_e(page.output_url)}' target='_blank' rel='noopener'>{_e(uri)}</a>"
            if page.output_url
            else f"<code id='output-link'>{_e(uri)}</code>"
        )
        links.append(f"output directory: {target}")
    parts.append("<nav>" + "".join(f"<span>{link}</span> " for link in links) + "</nav>")

    rows = [
        [
            _e(p["pool"]),
            _e(p["role"]),
            _e(p["machine"]),
            _e(p["accelerators"]),
            _e(p["replicas"]),
            _e(p["runs"]),
        ]
        for p in model.pools(job)
    ]
    parts.append("<h2>Pools</h2>")
    parts.append(
        _table(["pool", "role", "machine", "accelerators", "replicas", "image or package"], rows)
        if rows
        else "<p>No pool.</p>"
    )
    if any(p["reduction_server"] for p in model.pools(job)):
        parts.append("<p class='note'>workerpool2 runs the Reduction Server for the workers' all-reduce.</p>")
    rung = model.capacity_rung(job)
    if rung:
        parts.append(f"<p id='capacity-rung'>{_e(rung)}</p>")

    parts.append("<h2>Timeline</h2>")
    steps = [[_e(s["step"]), _e(s["time"]), _e(s["duration"])] for s in model.timeline(job)]
    parts.append(_table(["step", "time", "until the next step"], steps))
    parts.append(
        "<p class='note'>The API dates creation, start and end only: queued and pending are the wait "
        "from created to running.</p>"
    )
    error = job.get("error") or {}
    if error:
        parts.append(
            f"<p class='error' id='failure'>Failure (code {_e(error.get('code', ''))}): "
            f"{_e(error.get('message', ''))}</p>"
        )

    parts.append("<h2>Replicas and their recent log lines</h2>")
    if page.logs.note:
        parts.append(f"<p class='note' id='log-note'>{_e(page.logs.note)}</p>")
    keys = model.replica_keys(job) if "jobSpec" in job else []
    shown = list(dict.fromkeys([*keys, *page.logs.lines]))
    for key in shown:
        lines = page.logs.lines.get(key, [])
        items = "".join(
            f"<li class='sev-{_e(sev)}' data-rank='{SEVERITY_RANK.get(sev, 0)}'>"
            f"<span class='ts'>{_e(ts[11:19])}</span> <b>{_e(sev)}</b> {_e(text)}</li>"
            for sev, ts, text in lines
        )
        body = f"<ol class='log'>{items}</ol>" if items else "<p class='note'>No line yet.</p>"
        parts.append(f"<section class='replica' data-replica='{_e(key)}'><h3>{_e(key)}</h3>{body}</section>")

    if job.get("trials") or job.get("studySpec"):
        best = model.best_trial(job)
        trial_rows = model.trial_rows(job)
        parts.append("<h2>Trials</h2>")
        parts.append(model.trial_chart(job) or "<p class='note'>No trial has a final measurement yet.</p>")
        parts.append(model.intermediate_chart(job))
        parts.append(
            _table(
                [
                    "trial",
                    "state",
                    "parameters",
                    "final",
                    "intermediate",
                    "stopped early",
                    "infeasible reason",
                ],
                [
                    [
                        _e(r[k])
                        for k in (
                            "id",
                            "state",
                            "parameters",
                            "final",
                            "intermediate",
                            "stopped_early",
                            "infeasible",
                        )
                    ]
                    for r in trial_rows
                ],
                ["best" if r["id"] == best else "" for r in trial_rows],
            )
        )
    if model.is_running(job):
        parts.append(f"<p class='note'>Refreshed every {REFRESH_S} s while the job runs.</p>")
    parts.append("</main>")
    return "".join(parts)


def _document(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title><style>{_CSS}</style><script>{_SCRIPT % REFRESH_S}</script>"
        f"</head><body>{body}</body></html>"
    )


def job_page(page: JobPage) -> str:
    """The whole page: the severity filter, then ``main_section``."""
    options = "".join(
        f"<option value='{rank}'{' selected' if name == 'DEFAULT' else ''}>{name} and above</option>"
        for name, rank in SEVERITY_RANK.items()
        if name in ("DEFAULT", "INFO", "WARNING", "ERROR")
    )
    control = f"<p><label>Log lines: <select id='severity'>{options}</select></label></p>"
    return _document(f"Vertex AI job of {page.task_id}", control + main_section(page))


def index_page(rows: Sequence[Mapping[str, Any]], *, prefix: str) -> str:
    """The nav entry's page: the newest jobs of this provider's tasks the user may read, each linked to
    its task instance's view."""
    cells = []
    for row in rows:
        path = "/".join(quote(str(row[k]), safe="") for k in ("dag_id", "run_id", "task_id", "map_index"))
        cells.append(
            [
                f"<a href='{_e(prefix)}/ti/{_e(path)}'>{_e(row['job_name'].rsplit('/', 1)[-1])}</a>",
                _e(row["dag_id"]),
                _e(row["run_id"]),
                _e(row["task_id"] if int(row["map_index"]) < 0 else f"{row['task_id']}[{row['map_index']}]"),
                _e(row["timestamp"]),
            ]
        )
    table = _table(["job", "DAG", "run", "task", "pushed"], cells) if cells else "<p>No job yet.</p>"
    return _document("Vertex AI jobs", f"<main data-running='0'><h1>Vertex AI jobs</h1>{table}</main>")
