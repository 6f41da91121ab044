"""The job view's pages are Jinja2 templates with autoescaping: a hostile value in a job's display name,
a label (the capacity ladder's rung), an error message, a replica's log line or a trial comes out as
text, escaped, and a template expression in it is not evaluated."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from airflow_vertex_dist.ui.page import JobPage, LogView, index_page, job_page, main_section
from tests.emulator_suite import check_page

#: markup, both quotes and Jinja2's own syntax (an expression, a statement): shown as given
HOSTILE = '<script>alert("x")</script> it\'s {{ 7*7 }} {% if true %}yes{% endif %}'
NAME = "projects/p/locations/us-central1/customJobs/1"


class _Text(HTMLParser):
    """The text of a page as a browser reads it (character references decoded), one item per run,
    and its script elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.scripts += tag == "script"

    def handle_data(self, data: str) -> None:
        self.texts.append(data)


def _read(page: str) -> list[str]:
    reader = _Text()
    reader.feed(page)
    reader.close()
    assert reader.scripts <= 1, "a value became a <script> element"  # the page's own script only
    assert "49" not in page  # nothing evaluated
    return reader.texts


def _page(job: dict[str, Any]) -> JobPage:
    lines = {"workerpool0-0": [("ERROR", "2026-01-01T00:00:01Z", HOSTILE)], HOSTILE: [("INFO", "", "x")]}
    return JobPage(
        job=job,
        dag_id=HOSTILE,
        run_id=HOSTILE,
        task_id=HOSTILE,
        map_index=-1,
        console_url=f"https://console.example/{HOSTILE}",
        task_log_url=f"/dags/{HOSTILE}",
        output_url="",
        logs=LogView(lines=lines, note=HOSTILE),
    )


def test_a_hostile_job_shows_every_value_as_text() -> None:
    job = {
        "name": NAME,
        "displayName": HOSTILE,
        "state": "JOB_STATE_FAILED",
        "labels": {"airflow-rung": HOSTILE},
        "error": {"code": 13, "message": HOSTILE},
        "jobSpec": {
            "workerPoolSpecs": [{"replicaCount": 1, "containerSpec": {"imageUri": HOSTILE}}],
            "baseOutputDirectory": {"outputUriPrefix": f"gs://bkt/{HOSTILE}"},
        },
    }
    page = job_page(_page(job))
    check_page(page)
    texts = _read(page)
    assert f"Vertex AI job of {HOSTILE}" in texts  # the title: the task id
    assert HOSTILE in texts  # the h1 (display name), the pool's image, the log note, the log line
    assert f" {HOSTILE}" in texts  # the log line, after its severity
    assert f"Capacity ladder: rung {HOSTILE.removeprefix('r')}, STANDARD, in us-central1" in texts
    assert f"Failure (code 13): {HOSTILE}" in texts
    assert f"gs://bkt/{HOSTILE}" in texts  # the output directory
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    # the fragment the refresh fetches is the same <main>
    assert main_section(_page(job)) in page


def test_a_hostile_trial_and_index_row_are_text() -> None:
    study = {
        "name": NAME.replace("customJobs", "hyperparameterTuningJobs"),
        "displayName": "study",
        "state": "JOB_STATE_SUCCEEDED",
        "studySpec": {"metrics": [{"metricId": HOSTILE, "goal": "MAXIMIZE"}]},
        "trials": [
            {
                "id": HOSTILE,
                "state": "SUCCEEDED",
                "parameters": [{"parameterId": HOSTILE, "value": 1}],
                "finalMeasurement": {"metrics": [{"metricId": HOSTILE, "value": 1}]},
            }
        ],
    }
    page = job_page(_page(study))
    check_page(page)
    texts = _read(page)
    assert HOSTILE in texts  # the trial's id in the table
    assert "<script>alert" not in page

    row = {
        "dag_id": HOSTILE,
        "run_id": HOSTILE,
        "task_id": HOSTILE,
        "map_index": 2,
        "job_name": f"{NAME[:-1]}{HOSTILE}",
        "timestamp": HOSTILE,
    }
    page = index_page([row], prefix="/vertex-dist")
    check_page(page)
    texts = _read(page)
    assert texts.count(HOSTILE) == 3 and f"{HOSTILE}[2]" in texts  # DAG, run, pushed; the task
    assert "<script>alert" not in page
