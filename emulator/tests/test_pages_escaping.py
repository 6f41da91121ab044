"""The emulator's pages are Jinja2 templates with autoescaping: a hostile value in a job's display name,
a label, an error message or a replica's log line comes out as text, escaped, and a template
expression in it is not evaluated."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from strict_html import check_page

from vertex_emulator import pages
from vertex_emulator.testing import PARENT

#: markup, both quotes and Jinja2's own syntax (an expression, a statement): shown as given
HOSTILE = '<script>alert("x")</script> it\'s {{ 7*7 }} {% if true %}yes{% endif %}'


class _Text(HTMLParser):
    """The text of a page as a browser reads it (character references decoded), one item per run."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self.attrs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs += [value or "" for _, value in attrs]

    def handle_data(self, data: str) -> None:
        self.texts.append(data)


def _read(page: bytes) -> tuple[str, _Text]:
    text = page.decode()
    parser = check_page(text)
    assert not [tag for tag, _ in parser.tags if tag == "script"], "a value became a <script> element"
    reader = _Text()
    reader.feed(text)
    reader.close()
    return text, reader


def _job(state: str = "JOB_STATE_FAILED") -> dict[str, Any]:
    return {
        "name": f"{PARENT}/customJobs/1",
        "displayName": HOSTILE,
        "state": state,
        "labels": {"team": HOSTILE},
        "error": {"code": 13, "message": HOSTILE},
        "jobSpec": {"workerPoolSpecs": [{"replicaCount": 1, "containerSpec": {"imageUri": HOSTILE}}]},
    }


def test_a_hostile_job_page_shows_every_value_as_text() -> None:
    job = _job()
    page, reader = _read(pages.job_page(job["name"], job, lambda name, key: {"state": HOSTILE}))
    texts = "\n".join(reader.texts)
    assert texts.count(HOSTILE) >= 4  # the title, the h1, the display name, the pool's image, the state
    assert f"team={HOSTILE}" in texts  # the label
    assert "49" not in page  # nothing evaluated: each value is the whole text, as given
    # the error as JSON: its message escaped inside the <pre>
    assert '"message": "<script>alert(\\"x\\")</script> it\'s {{ 7*7 }}' in texts
    assert "&lt;script&gt;" in page and "<script>" not in page


def test_a_hostile_replica_log_line_and_index_row_are_text() -> None:
    job = _job("JOB_STATE_RUNNING")
    view = {"state": HOSTILE, "log_tail": ["fine", HOSTILE], "env": {"k": HOSTILE}}
    page, reader = _read(pages.replica_page(job["name"], "workerpool0-0", job, view))
    assert f"fine\n{HOSTILE}" in reader.texts  # the log tail, one <pre>
    assert "<script>" not in page and "49" not in page

    page, reader = _read(pages.index_page([job], limit=10))
    assert HOSTILE in reader.texts  # the job's link text
    assert "<script>" not in page and "49" not in page


def test_a_hostile_metric_and_trial_id_in_the_chart_are_text() -> None:
    study = {
        "name": f"{PARENT}/hyperparameterTuningJobs/2",
        "displayName": "study",
        "state": "JOB_STATE_SUCCEEDED",
        "studySpec": {"metrics": [{"metricId": HOSTILE, "goal": "MAXIMIZE"}]},
        "trials": [
            {
                "id": HOSTILE,
                "state": "SUCCEEDED",
                "finalMeasurement": {"metrics": [{"metricId": HOSTILE, "value": 1}]},
            }
        ],
    }
    page, reader = _read(pages.job_page(study["name"], study, lambda name, key: None))
    assert f"trial {HOSTILE}: {HOSTILE} = 1 (best)" in reader.texts
    assert "<script>" not in page and "49" not in page
