"""The job view's HTML: one page per task instance's job, with inline CSS and an inline script (a
severity filter, a refresh of the page's ``<main>`` every ``REFRESH_S`` seconds while the job runs,
and the links out of Airflow's frame); the charts are inline SVG (``model.py``). Nothing is loaded
from elsewhere. The pages are Jinja2 templates (``templates/``: ``view.css``, ``view.js``, the pages),
autoescaped: every value is escaped; only the charts, markup ``model.py`` builds (escaping the values
in it), are passed through as they are. The templates are read when the first page is rendered, not
when the plugin is loaded.

A template is written as indented lines, joined when it is loaded (each line's leading whitespace and
its line break left out, ``view.js`` excepted), so a page is one line of HTML as before: a tag, an
expression or a statement stays on one line, and text never begins a line with a space it needs.

Airflow's UI shows an external view in a sandboxed iframe (``allow-scripts allow-same-origin
allow-forms allow-downloads``: no ``allow-top-navigation``, no ``allow-popups``), where a link can
neither replace the page (``target=_top``) nor open a tab (``target=_blank``). The view is served by
the same origin as the UI, so the script follows such a link (``http`` or ``https`` only) from the
top document instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.ext import Extension

from airflow_vertex_dist.common.log_severity import SEVERITIES
from airflow_vertex_dist.ui import model, times
from airflow_vertex_dist.ui.sections import replica_sections
from airflow_vertex_dist.ui.study import study_facts

UTC = timezone.utc

__all__ = ["REFRESH_S", "SEVERITY_RANK", "JobPage", "LogView", "index_page", "job_page", "main_section"]

#: seconds between two refreshes of a page whose job runs
REFRESH_S = 10
#: Cloud Logging's severities, in order (LogSeverity): the ones the logs hook and poller use
SEVERITY_RANK = SEVERITIES
#: the templates' directory, package data of the provider (the wheel holds the whole package folder)
TEMPLATES = Path(__file__).parent / "templates"
#: the severities the page's filter offers, each with the lines at and above it
_FILTER = ("DEFAULT", "INFO", "WARNING", "ERROR")


@dataclass
class LogView:
    """The recent log lines of a job's replicas, as the view shows them: ``lines`` by replica key
    (``trial <id> / workerpoolN-i`` for a trial's), each ``(severity, timestamp, text)``; ``note``
    says when they were read or why not."""

    lines: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    note: str = ""


@dataclass
class JobPage:
    """What one page shows: the job, where it came from, and its links; ``rungs``: a capacity
    ladder's rungs tried (``rungs.rung_rows``); ``ledger``: the task's cost ledger as shown
    (``ledger.ledger_view``); ``zone``: the timezone of the times as the page is
    served (Airflow's ``default_ui_timezone``; the page's script then shows the user's); ``now``:
    the time a running job's elapsed time counts to (the time of the request)."""

    job: Mapping[str, Any]
    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    console_url: str
    task_log_url: str
    output_url: str
    logs: LogView
    rungs: list[dict[str, str]] = field(default_factory=list)
    ledger: dict[str, Any] | None = None
    zone: tzinfo = UTC
    now: datetime | None = None


class _JoinLines(Extension):
    """Joins a template's lines, each without its indentation, before Jinja reads it (not a script's:
    its line breaks are kept)."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        if name is not None and name.endswith(".js"):
            return source
        return "".join(line.lstrip() for line in source.splitlines())


@cache
def _environment() -> jinja2.Environment:
    """Made on the first page: autoescaping for ``.html`` templates, an undefined variable an error
    (never an empty string), templates read once."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        extensions=[_JoinLines],
        auto_reload=False,
    )


def _render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(context, refresh_s=REFRESH_S)


_TRIAL_COLUMNS = ("id", "state", "parameters", "final", "intermediate", "stopped_early", "infeasible")


def _timeline(page: JobPage) -> list[dict[str, Any]]:
    """The timeline's rows, each time shown in the page's zone; the last row of a running job counts
    up from its time (``since``)."""
    job = page.job
    rows = model.timeline(job, now=page.now or datetime.now(UTC))
    shown: list[dict[str, Any]] = [
        {**row, "time": times.shown(row["time"], page.zone), "since": ""} for row in rows
    ]
    if shown and model.is_running(job):
        shown[-1]["since"] = times.shown(rows[-1]["time"])["iso"]
    return shown


def _main_context(page: JobPage) -> dict[str, Any]:
    """What ``main.html`` shows of ``page``: the values as they are (the template escapes them)."""
    job = page.job
    pools = model.pools(job)
    study = bool(job.get("trials") or job.get("studySpec"))
    trial_rows = model.trial_rows(job) if study else []
    best = model.best_trial(job) if study else None
    running = model.is_running(job)
    started = job.get("startTime") or job.get("createTime")
    lines = {
        key: [(sev, times.shown(ts, page.zone), text) for sev, ts, text in found]
        for key, found in page.logs.lines.items()
    }
    return {
        "running": running,
        "since": times.shown(started)["iso"] if running and started else "",
        "heading": job.get("displayName") or job.get("name", ""),
        "job_state": job.get("state"),
        "name": job.get("name", ""),
        "console_url": page.console_url,
        "task_log_url": page.task_log_url,
        "output_uri": model.output_uri(job),
        "output_url": page.output_url,
        "pools": [
            [p[k] for k in ("pool", "role", "machine", "accelerators", "replicas", "runs")] for p in pools
        ],
        "reduction_server": any(p["reduction_server"] for p in pools),
        "rung": model.capacity_rung(job),
        "rungs": page.rungs,
        "ledger": page.ledger,
        "timeline": _timeline(page),
        "error": job.get("error") or {},
        "log_note": page.logs.note,
        "sections": replica_sections(job, lines),
        "ranks": SEVERITY_RANK,
        "study": study,
        "study_facts": study_facts(job) if study else [],
        "trial_chart": model.trial_chart(job) if study else "",
        "intermediate_chart": model.intermediate_chart(job) if study else "",
        "trials": [[r[k] for k in _TRIAL_COLUMNS] for r in trial_rows],
        "trial_classes": ["best" if r["id"] == best else "" for r in trial_rows],
    }


def main_section(page: JobPage) -> str:
    """The page's ``<main>``: what the refresh replaces (``data-running='1'`` while the job runs)."""
    return _render("main.html", **_main_context(page))


def job_page(page: JobPage) -> str:
    """The whole page: the severity filter, then ``main_section``."""
    return _render(
        "job.html",
        title=f"Vertex AI job of {page.task_id}",
        severities=[(name, rank) for name, rank in SEVERITY_RANK.items() if name in _FILTER],
        **_main_context(page),
    )


def index_page(
    rows: Sequence[Mapping[str, Any]], *, prefix: str, runs: Sequence[Mapping[str, str]] = ()
) -> str:
    """The nav entry's page: the newest jobs of this provider's tasks the user may read (rows of
    ``listing.list_row``, or the XCom rows themselves: then without what their jobs say), each linked
    to its task instance's view; ``runs``: the cost totals of each DAG run listed
    (``ledger.run_totals``)."""
    from airflow_vertex_dist.ui.listing import list_row

    shown = [row if "path" in row else list_row(row, None) for row in rows]
    return _render("index.html", title="Vertex AI jobs", rows=shown, prefix=prefix, runs=list(runs))
