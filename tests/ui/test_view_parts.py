"""The job view's parts, rendered without a server: times in Airflow's format and timezone, a running
job's elapsed time, a tuning job's study first, the replica sections in order with the service's lines
folded, a ladder's rungs with their prices from the catalog, the jobs list's columns, both themes'
colours, and distinct names for the tab and the extra link."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from airflow_vertex_dist.links import VertexJobLink
from airflow_vertex_dist.ui import times
from airflow_vertex_dist.ui.listing import list_row, one_row_per_job
from airflow_vertex_dist.ui.page import TEMPLATES, JobPage, LogView, index_page, job_page, main_section
from airflow_vertex_dist.ui.plugin import VertexDistUiPlugin
from airflow_vertex_dist.ui.rungs import job_price, rung_names, rung_rows, steps_of
from airflow_vertex_dist.ui.sections import replica_sections
from airflow_vertex_dist.ui.study import study_facts
from tests.emulator_suite import check_page

NAME = "projects/p/locations/us-central1/customJobs/7"
STUDY = "projects/p/locations/us-central1/hyperparameterTuningJobs/9"
LABELS = {"airflow-dag": "d", "airflow-task": "t", "airflow-run": "r-1"}
POOL = {
    "replicaCount": 1,
    "machineSpec": {"machineType": "n1-standard-4"},
    "containerSpec": {"imageUri": "i"},
}
NOW = datetime(2026, 12, 6, 4, 35, 0, tzinfo=timezone.utc)


def _page(job: dict[str, Any], **extra: Any) -> JobPage:
    return JobPage(
        job=job,
        dag_id="d",
        run_id="r",
        task_id="t",
        map_index=-1,
        console_url="",
        task_log_url="/dags/d",
        output_url="",
        logs=extra.pop("logs", LogView()),
        **extra,
    )


def _running() -> dict[str, Any]:
    return {
        "name": NAME,
        "state": "JOB_STATE_RUNNING",
        "createTime": "2026-12-06T04:30:26.200637Z",
        "startTime": "2026-12-06T04:31:00.123456789Z",
        "labels": {**LABELS, "airflow-rung": "r2"},
        "jobSpec": {"workerPoolSpecs": [POOL, {**POOL, "replicaCount": 2}]},
    }


def test_times_are_shown_in_airflows_format_and_the_ui_timezone() -> None:
    shown = times.shown("2026-12-06T04:30:26.200637Z", ZoneInfo("Europe/Paris"))
    assert shown == {"iso": "2026-12-06T04:30:26.200637Z", "text": "2026-12-06 05:30:26 CET"}
    assert times.shown("2026-12-06T04:30:26.123456789Z")["text"] == "2026-12-06 04:30:26 UTC"  # nanoseconds
    assert times.shown("not a time") == {"iso": "", "text": "not a time"}
    assert times.duration(3723) == "1h 02m 03s" and times.duration(63) == "1m 03s"


def test_the_pages_timezone_is_airflows_default_ui_timezone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__API__DEFAULT_UI_TIMEZONE", "Europe/Paris")
    assert times.ui_timezone() == ZoneInfo("Europe/Paris")
    monkeypatch.setenv("AIRFLOW__API__DEFAULT_UI_TIMEZONE", "system")
    assert times.ui_timezone() == timezone.utc


def test_a_running_job_shows_its_times_as_time_elements_and_its_elapsed_time() -> None:
    check_page(job_page(_page(_running(), zone=ZoneInfo("Europe/Paris"), now=NOW)))
    main = main_section(_page(_running(), zone=ZoneInfo("Europe/Paris"), now=NOW))
    assert "2026-12-06T04:30:26.200637Z" not in re.sub(r"datetime='[^']*'|data-since='[^']*'", "", main)
    assert (
        "<time datetime='2026-12-06T04:30:26.200637Z' data-format='datetime'>2026-12-06 05:30:26 CET</time>"
        in main
    )
    # the heading counts up from the start, the timeline's last step from its time: 4m 00s at NOW
    assert "<span class='elapsed' data-since='2026-12-06T04:31:00.123456Z'>" in main
    assert re.search(
        r"<td>running</td><td><time [^>]*>[^<]*</time></td><td><span class='elapsed' "
        r"data-since='2026-12-06T04:31:00.123456Z'>4m 00s</span>",
        main,
    )


def _study(**extra: Any) -> dict[str, Any]:
    trials = [
        {
            "id": str(i),
            "state": "SUCCEEDED" if i < 3 else "ACTIVE",
            "parameters": [{"parameterId": "x", "value": float(i)}],
            **({"finalMeasurement": {"metrics": [{"metricId": "loss", "value": 1.0 / i}]}} if i < 3 else {}),
        }
        for i in (1, 2, 3)
    ]
    return {
        "name": STUDY,
        "state": "JOB_STATE_RUNNING",
        "createTime": "2026-12-06T04:30:26Z",
        "maxTrialCount": 8,
        "parallelTrialCount": 2,
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [{"parameterId": "x", "integerValueSpec": {"minValue": "1", "maxValue": "8"}}],
            "algorithm": "RANDOM_SEARCH",
        },
        "trialJobSpec": {"workerPoolSpecs": [POOL]},
        "trials": trials,
        **extra,
    }


def test_a_tuning_job_leads_with_its_study_and_chart_then_its_trials_then_its_pools() -> None:
    assert study_facts(_study()) == [
        ("metric", "loss (minimize)"),
        ("algorithm", "RANDOM_SEARCH"),
        ("trials", "2/8 ended, 1 running, 2 at a time"),
        ("best trial", "trial 2: loss = 0.5 (x=2)"),
    ]
    check_page(job_page(_page(_study(), now=NOW)))
    main = main_section(_page(_study(), now=NOW))
    order = [
        main.index(mark) for mark in ("id='study'", "id='trial-chart'", "id='trials-table'", "<h2>Pools</h2>")
    ]
    assert order == sorted(order)
    assert "<dt>trials</dt><dd data-fact='trials'>2/8 ended, 1 running, 2 at a time</dd>" in main


def test_replica_sections_are_in_trial_then_pool_order_and_the_service_lines_are_folded() -> None:
    line = [("INFO", "2026-12-06T04:30:26Z", "up")]
    lines = {
        key: line for key in ("trial 10 / service", "trial 10 / workerpool0-0", "trial 2 / workerpool0-0")
    }
    keys = [s.key for s in replica_sections(_study(trials=[{"id": "2"}, {"id": "10"}]), lines)]
    assert keys == ["trial 2 / workerpool0-0", "trial 10 / workerpool0-0", "trial 10 / service"]
    job = {"name": NAME, "jobSpec": {"workerPoolSpecs": [POOL, {**POOL, "replicaCount": 2}, {}, POOL]}}
    lines = {"service": line, "workerpool3-0": line, "workerpool1-1": line, "workerpool0-0": line}
    sections = replica_sections(job, lines)
    assert [s.key for s in sections] == [
        "workerpool0-0",
        "workerpool1-0",
        "workerpool1-1",
        "workerpool3-0",
        "service",
    ]
    assert [s.folded for s in sections] == [False, True, False, False, True]  # no line yet; the service's
    main = main_section(_page(job, logs=LogView(lines)))
    assert (
        "<section class='replica' data-replica='service'><details>"
        "<summary>service (the service's own lines, 1)" in main
    )
    assert "<section class='replica' data-replica='workerpool0-0'><h3>workerpool0-0</h3>" in main


def test_a_ladders_rungs_tried_with_their_job_outcome_time_and_price() -> None:
    left = {
        **_running(),
        "name": NAME.replace("/7", "/6"),
        "state": "JOB_STATE_FAILED",
        "labels": {**LABELS, "airflow-rung": "r1"},
        "endTime": "2026-12-06T04:30:00Z",
        "jobSpec": {"workerPoolSpecs": [POOL], "scheduling": {"strategy": "SPOT"}},
    }
    stranger = {**left, "name": NAME.replace("/7", "/5"), "labels": {**LABELS, "airflow-task": "other"}}
    steps = [
        {
            "rung": 1,
            "name": "spot",
            "region": "us-central1",
            "job": left["name"],
            "outcome": "STOCKOUT",
            "reason": "no capacity",
            "seconds": 95.0,
        },
        {
            "rung": 2,
            "name": "",
            "region": "europe-west4",
            "job": None,
            "outcome": "QUOTA",
            "reason": "",
            "seconds": 1,
        },
        {
            "rung": 3,
            "name": "",
            "region": "us-central1",
            "job": stranger["name"],
            "outcome": "STOCKOUT",
            "reason": "",
            "seconds": 2,
        },
    ]
    jobs = {left["name"]: left, stranger["name"]: stranger}
    # the rung the job runs on is named as the rungs left are: the walk's state (pushed when the task
    # deferred) names it, and once the task ended its return value does
    names = rung_names(None, {"steps": steps, "rung": {"number": 2, "name": "on-demand"}})
    assert names == rung_names({"rung": {"number": 2, "name": "on-demand", "left": steps}}, None)
    assert names == {1: "spot", 2: "on-demand"}
    rows = rung_rows(_running(), steps, jobs.get, now=NOW, names=names)
    assert [(r["rung"], r["job"], r["outcome"], r["took"], r["price"]) for r in rows] == [
        ("1 (spot)", "6", "left: STOCKOUT (no capacity)", "1m 35s", "at most $0.22/h"),
        ("2", "none (Create refused)", "left: QUOTA", "0m 01s", ""),
        ("3", "5", "left: STOCKOUT", "0m 02s", ""),  # another task's job: never read through this one
        ("2 (on-demand)", "7", "RUNNING", "4m 34s", "$0.66/h"),  # 3 replicas of n1-standard-4
    ]
    assert rung_rows(_running(), steps, jobs.get, now=NOW)[-1]["rung"] == "2"  # no name known: its number
    assert job_price({**_running(), "name": "nowhere"}) == ""
    # the rungs left: the task's return value once it ended, else the walk's state in XCom
    assert steps_of({"rung": {"left": steps[:1]}}, {"steps": steps}) == steps[:1]
    assert steps_of(None, {"steps": steps}) == steps
    check_page(job_page(_page(_running(), rungs=rows, now=NOW)))
    main = main_section(_page(_running(), rungs=rows, now=NOW))
    assert main.index("id='rungs-table'") < main.index("<h2>Pools</h2>")
    assert "<td class='left'>left: STOCKOUT (no capacity)</td><td>1m 35s</td><td>at most $0.22/h</td>" in main


def test_the_jobs_list_shows_state_kind_display_name_duration_and_the_rungs_jobs() -> None:
    xcom = {
        "dag_id": "d",
        "run_id": "r",
        "task_id": "t",
        "map_index": -1,
        "timestamp": "2026-12-06T04:30:27+00:00",
        "job_name": NAME,
    }
    steps = [{"rung": 1, "job": NAME.replace("/7", "/6"), "outcome": "STOCKOUT"}]
    running = list_row(xcom, {**_running(), "displayName": "bert"}, steps, now=NOW)
    ended = list_row(
        {**xcom, "job_name": STUDY},
        {**_study(), "state": "JOB_STATE_SUCCEEDED", "endTime": "2026-12-06T05:30:26Z"},
    )
    unread = list_row(xcom, None)
    assert [(r["state"], r["kind"], r["display_name"], r["duration"]) for r in (running, ended, unread)] == [
        ("RUNNING", "custom job", "bert", "4m 34s"),
        ("SUCCEEDED", "tuning job", "", "1h 00m 00s"),
        ("?", "custom job", "", ""),
    ]
    page = index_page([running, ended], prefix="/vertex-dist")
    check_page(page)
    assert "<span class='note rung-job'>rung 1: 6 (left: STOCKOUT)</span>" in page
    assert "<span class='elapsed' data-since='2026-12-06T04:30:26.200637Z'>4m 34s</span>" in page
    assert "<td class='SUCCEEDED'>SUCCEEDED</td><td>tuning job</td>" in page


def test_the_jobs_list_has_one_row_per_job_naming_every_task_that_pushed_it() -> None:
    """A tuning task and the trial sensor watching its job both push the job's link: one row, the
    tuning task's (it pushed first), naming both tasks, each linking to its own view."""
    base = {"dag_id": "d", "run_id": "r", "map_index": -1, "job_name": STUDY}
    gate = {**base, "task_id": "gate", "timestamp": "2026-12-06T04:40:00+00:00"}
    tune = {**base, "task_id": "tune", "timestamp": "2026-12-06T04:30:27+00:00"}
    other = {**base, "task_id": "train", "timestamp": "2026-12-06T04:20:00+00:00", "job_name": NAME}
    merged = one_row_per_job([gate, other, tune])  # the XComs newest first
    assert [(m["task_id"], [p["task_id"] for p in m["pushers"]]) for m in merged] == [
        ("tune", ["tune", "gate"]),
        ("train", ["train"]),
    ]
    rows = [list_row(m, None) for m in merged]
    assert [r["task"] for r in rows] == ["tune", "train"]
    assert [[t["task"] for t in r["tasks"]] for r in rows] == [["tune", "gate"], ["train"]]
    page = index_page(rows, prefix="/vertex-dist")
    check_page(page)
    assert page.count(">9</a>") == 1  # the tuning job once
    links = "<a href='/vertex-dist/ti/d/r/tune/-1'>tune</a>, <a href='/vertex-dist/ti/d/r/gate/-1'>gate</a>"
    assert f"<td>{links}</td>" in page
    assert "<td>train</td>" in page


def test_both_themes_have_their_colours_and_the_script_follows_airflows() -> None:
    css = (TEMPLATES / "view.css").read_text()
    assert ":root[data-theme=dark]{color-scheme:dark;" in css
    assert "@media (prefers-color-scheme:dark){:root:not([data-theme])" in css  # without the script
    # form controls (the log-level <select>) take the theme's colours, not the browser's light default
    controls = re.search(r"^select,[^{]*\{([^}]*)\}", css, re.M)
    assert controls is not None and "color:var(--fg)" in controls[1] and "background:var(--bg)" in controls[1]
    page = job_page(_page(_running()))
    # Airflow's UI: next-themes' class on <html> and its "theme" key; its "timezone" key
    for mark in ("c.contains('dark')", "stored('theme')", "stored('timezone')"):
        assert mark in page


def test_the_tab_and_the_extra_link_have_distinct_names() -> None:
    tabs = {view["name"] for view in VertexDistUiPlugin.external_views}
    assert tabs == {"Vertex AI job", "Vertex AI jobs"}
    assert VertexJobLink.name == "Vertex AI console" and VertexJobLink.name not in tabs


def test_the_ledger_section_shows_the_returned_ledger_by_rung_and_the_total() -> None:
    from airflow_vertex_dist.jobs.ledger import ledger_entry, task_ledger
    from airflow_vertex_dist.ui.ledger import ledger_of, ledger_view

    left = {
        "name": NAME.replace("/7", "/6"),
        "state": "JOB_STATE_FAILED",
        "createTime": "2026-12-06T04:28:51Z",
        "endTime": "2026-12-06T04:30:26Z",
        "labels": {**LABELS, "airflow-rung": "r1"},
        "jobSpec": {"workerPoolSpecs": [POOL], "scheduling": {"strategy": "SPOT"}},
    }
    ended = {**_running(), "state": "JOB_STATE_SUCCEEDED", "endTime": "2026-12-06T05:31:00.123456789Z"}
    returned = task_ledger([ledger_entry(left, "spot", preemptions=[]), ledger_entry(ended, "on-demand")])
    steps = [{"rung": 1, "name": "spot", "job": left["name"], "outcome": "stockout"}]
    # the returned ledger ends with the job: it is the one shown (it read the logs)
    assert ledger_of(returned, ended, steps, {left["name"]: left}.get) is returned
    # one that does not (an XCom any task may write) is not: the ledger is reckoned from the jobs
    other = {**returned, "jobs": returned["jobs"][:1]}
    reckoned = ledger_of(other, ended, steps, {left["name"]: left}.get, names={2: "on-demand"})
    assert [e["rung"] for e in reckoned["jobs"]] == ["spot", "on-demand"]
    assert reckoned["jobs"][1] == returned["jobs"][1]
    assert reckoned["jobs"][0]["queued_seconds"] == 95.0  # the rung's job, read: the same task's
    stranger = {**left, "labels": {**left["labels"], "airflow-run": "r-other"}}
    unread = ledger_of(None, ended, steps, {left["name"]: stranger}.get)["jobs"][0]
    assert unread["job"] == left["name"] and unread["queued_seconds"] is None  # another task's: not read
    view = ledger_view(returned)
    assert [r["rung"] for r in view["rungs"]] == ["spot", "on-demand"]
    assert view["jobs"][0]["usd"] == "$0.00" and view["jobs"][0]["run"] == "0m 00s"  # never ran: free
    assert view["jobs"][1]["usd"] == "$0.66" and view["jobs"][1]["gpus"] == "none"  # 3 x n1-standard-4, 1 h
    assert view["total"]["usd"] == "$0.66" and view["total"]["queued"] == "2m 09s"  # 1m 35s + 0m 34s
    main = main_section(_page(ended, ledger=view))
    check_page(job_page(_page(ended, ledger=view)))
    assert "<tr class='total'><td>task</td><td colspan='3'>2 jobs</td><td>0.00</td><td>$0.66</td>" in main
    assert "<tr class='subtotal'><td>spot</td><td colspan='3'>1 job</td>" in main
    assert main.index("id='ledger-table'") < main.index("<h2>Pools</h2>")
    assert "ledger-table" not in main_section(_page(ended))  # no ledger: no section


def test_the_jobs_list_totals_each_dag_run_once_per_job() -> None:
    from airflow_vertex_dist.jobs.ledger import ledger_entry
    from airflow_vertex_dist.ui.ledger import run_totals

    ended = {**_running(), "state": "JOB_STATE_SUCCEEDED", "endTime": "2026-12-06T05:31:00.123456789Z"}
    spot = {
        **ended,
        "name": NAME.replace("/7", "/8"),
        "jobSpec": {**ended["jobSpec"], "scheduling": {"strategy": "SPOT"}},
    }
    one, two = ledger_entry(ended), ledger_entry(spot, preemptions=[])
    # the task and a sensor watching its job list it twice: counted once
    runs = run_totals([("d", "r", [one]), ("d", "r", [one, two]), ("d", "r2", [two])])
    assert [(r["dag_id"], r["run_id"], r["jobs"], r["usd"]) for r in runs] == [
        ("d", "r", "2", "at most $1.31"),
        ("d", "r2", "1", "at most $0.66"),
    ]
    row = {"dag_id": "d", "run_id": "r", "task_id": "t", "map_index": -1, "job_name": NAME, "timestamp": None}
    page = index_page([list_row(row, ended)], prefix="/vertex-dist", runs=runs)
    check_page(page)
    assert "<tr><td>d</td><td>r</td><td>2</td><td>0.00</td><td>at most $1.31</td>" in page
    assert "run-totals-table" not in index_page([list_row(row, ended)], prefix="/vertex-dist")
