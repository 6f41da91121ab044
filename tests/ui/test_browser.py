"""The job view in a real browser on the real stack: Chromium (Debian's package, driven by Playwright)
against the api-server, scheduler, triggerer, dag-processor and emulator of ``login_stack.py``, whose
users log in through Airflow's login page.

* The README's pool layout (``dags/ui_dags.py``: ``ui_layout``): on the task instance's page in
  Airflow's UI, the "Vertex AI job" tab shows its three pools; a line the primary prints once the page
  is open appears in the page by the page's own refresh (the frame is never reloaded), and so does the
  job's end; the frame's links open the emulator's job page and Airflow's task page.
* A 6-trial study (``ui_study``): the tab leads with the study (metric, goal, algorithm, trials 6/6,
  best trial) and its chart, above the fold of the task's page; it draws 6 points and marks the best
  trial (x = 4).
* Airflow's dark mode (its ``theme`` key, the class on its ``<html>``): the framed view is dark too,
  and follows a switch back to light without a reload; the timezone chosen in Airflow's UI (its
  ``timezone`` key) is the one the view's times are shown in, in Airflow's format.
* A capacity ladder (``ui_ladder``, its first rung stocked out): the tab's table of rungs tried shows
  rung 1 left for a stockout, with its job and price, then rung 2 succeeded; the jobs list shows the
  job's state, kind, display name and duration, and rung 1's job.
* A user without access to the DAG (the simple auth manager's user without a role: it has no way to
  grant some DAGs and not others) is refused the view (403) and sees no job in the jobs list; without
  a login the view is 401. The admin's jobs list, opened from the Browse menu, lists the job.

The tests write the screenshots ``docs/ui.md`` shows (``docs/images/ui-*.png``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

from airflow_vertex_dist.ui.app import PREFIX

from .login_stack import LoginStack

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Frame, Page, ViewportSize

pytestmark = [pytest.mark.stack, pytest.mark.timeout(1500)]

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
#: what the primary prints once told to (dags/ui_dags.py)
EPOCH_LINE = "workerpool0-0: epoch 1 done, loss 0.4321"
TAB = "Vertex AI job"
#: the browser's window: the task's page in Airflow's UI, the fold the study's chart must be above
VIEWPORT: ViewportSize = {"width": 1400, "height": 1000}
#: the view's body in Airflow's dark mode (view.css's --bg)
DARK_BG = "rgb(9, 9, 11)"
#: the emulator's capacity for the ladder: no A100 in the connection's region (a job there fails with
#: the region's stockout after 1 s); then back to no limit for the tests after it
STOCKED_OUT = {"stock": {"us-central1": {"NVIDIA_TESLA_A100": 0}}, "stockout_after_s": 1.0}
UNLIMITED = {"quota": {}, "stock": {}, "stockout_after_s": 60.0, "over_quota": "queue"}
#: Playwright's waits (each one a poll with this deadline): the machine may be loaded
WAIT_MS = 90_000
#: the README's layout, as the pools table shows it: pool, role, machine, accelerators, replicas
README_POOLS = [
    ("workerpool0", "primary", "n1-highmem-96", "8 x NVIDIA_TESLA_V100", "1"),
    ("workerpool1", "workers", "n1-highmem-96", "8 x NVIDIA_TESLA_V100", "4"),
    ("workerpool2", "Reduction Server", "n1-highcpu-16", "", "16"),
]


def login(browser: Browser, stack: LoginStack, user: str) -> BrowserContext:
    """A new browser context logged in as ``user`` through Airflow's login page."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(f"{stack.api_url}/")
    page.get_by_label("Username").fill(user)
    page.get_by_label("Password").fill(stack.passwords[user])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{stack.api_url}/")
    page.close()
    return context


def task_page(stack: LoginStack, dag_id: str, run_id: str, task_id: str) -> str:
    return f"{stack.api_url}/dags/{dag_id}/runs/{quote(run_id, safe='')}/tasks/{task_id}"


def view_url(stack: LoginStack, dag_id: str, run_id: str, task_id: str) -> str:
    return f"{stack.api_url}{PREFIX}/ti/{dag_id}/{quote(run_id, safe='')}/{task_id}/-1"


def open_tab(page: Page, url: str) -> Frame:
    """Open a task instance's page in Airflow's UI, click the view's tab; the view's frame, loaded."""
    page.goto(url)
    page.get_by_text(TAB, exact=True).click()
    page.wait_for_url("**/plugin/vertex_ai_job")
    return frame_of(page, TAB)


def open_from_menu(page: Page, menu: str, item: str, url: str, attempts: int = 3) -> None:
    """Open ``item`` of the nav menu ``menu`` and wait for the UI's route to become ``url``. The UI is
    a single-page app: on a loaded machine a click that lands before the app has wired its menu is
    lost, so the menu is opened again (up to ``attempts`` times) until the route changes."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    for attempt in range(attempts):
        page.get_by_role("button", name=menu).click()
        page.get_by_text(item, exact=True).click()
        try:
            page.wait_for_url(url, wait_until="commit", timeout=WAIT_MS / attempts)
            return
        except PlaywrightTimeoutError:
            if attempt == attempts - 1:
                raise
            page.keyboard.press("Escape")


def frame_of(page: Page, title: str) -> Frame:
    """The content of the plugin's iframe ``title`` on the page, once its ``<main>`` is there."""
    element = page.wait_for_selector(f"iframe[title='{title}']")
    assert element is not None
    frame = element.content_frame()
    assert frame is not None
    frame.wait_for_selector("main")
    return frame


def table_rows(frame: Frame | Page, table: str) -> list[tuple[str, ...]]:
    """The cells of a table's rows (its header row left out)."""
    rows = frame.locator(table).locator("tr").all()
    return [tuple(c.inner_text().strip() for c in row.locator("td").all()) for row in rows[1:]]


def shoot(page: Page, name: str, **kwargs: Any) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / name), **kwargs)


@pytest.fixture(scope="module")
def study_run(login_stack: LoginStack) -> str:
    """A finished run of ``ui_study`` (6 trials)."""
    run_id = login_stack.trigger("ui_study")
    assert login_stack.wait_run("ui_study", run_id, timeout=600) == "success"
    return run_id


@pytest.fixture
def admin(browser: Browser, login_stack: LoginStack) -> Iterator[BrowserContext]:
    context = login(browser, login_stack, "admin")
    yield context
    context.close()


def test_the_tab_shows_the_readme_layout_and_a_replica_line_appears_while_the_job_runs(
    admin: BrowserContext, login_stack: LoginStack, tmp_path: Path
) -> None:
    stack = login_stack
    go, done = tmp_path / "go", tmp_path / "done"
    run_id = stack.trigger("ui_layout", conf={"go_file": str(go), "done_file": str(done)})
    stack.wait_task_state("ui_layout", run_id, "train", {"deferred"}, timeout=300)

    page = admin.new_page()
    frame = open_tab(page, task_page(stack, "ui_layout", run_id, "train"))
    assert "JOB_STATE_RUNNING" in frame.locator("main h1").inner_text()
    pools = table_rows(frame, "#pools-table")
    assert [row[:5] for row in pools] == README_POOLS
    assert pools[0][5] == pools[1][5] == "us-docker.pkg.dev/my-project/train/trainer:latest"
    assert pools[2][5].startswith("us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:")
    for replica in ["workerpool0-0", *(f"workerpool1-{i}" for i in range(4))]:
        frame.locator(f"section[data-replica='{replica}']").get_by_text(f"{replica}: data loaded").wait_for()
    assert frame.locator("section[data-replica='workerpool2-15']").count() == 1
    assert frame.get_by_text(EPOCH_LINE).count() == 0

    # the primary prints its line now: the open page shows it through its own refresh, unreloaded
    frame.evaluate("window.avdMark = 'not reloaded'")
    go.touch()
    frame.locator("section[data-replica='workerpool0-0']").get_by_text(EPOCH_LINE).wait_for()
    assert frame.evaluate("window.avdMark") == "not reloaded"
    shoot(page, "ui-task-tab.png")
    standalone = admin.new_page()
    standalone.set_viewport_size({"width": 1100, "height": 1250})
    standalone.goto(view_url(stack, "ui_layout", run_id, "train"))
    standalone.get_by_text(EPOCH_LINE).wait_for()
    shoot(standalone, "ui-job.png")
    standalone.close()

    # the job ends: the page shows it, and stops refreshing
    done.touch()
    frame.locator("main h1").get_by_text("JOB_STATE_SUCCEEDED").wait_for()
    assert frame.locator("main").get_attribute("data-running") == "0"
    assert frame.evaluate("window.avdMark") == "not reloaded"
    assert stack.wait_run("ui_layout", run_id, timeout=300) == "success"

    # the links leave Airflow's sandboxed frame: the emulator's job page in a new tab, the task's
    # page in place of the current one
    with admin.expect_page() as popup:
        frame.locator("#console-link").click()
    assert popup.value.url.startswith(f"{stack.rest_endpoint}/ui/projects/stack-project/")
    popup.value.close()
    frame.locator("#task-log-link").click()
    page.wait_for_url(re.compile(r".*/dags/ui_layout/runs/[^/]+/tasks/train$"))


def test_a_six_trial_study_draws_six_points_and_marks_the_best(
    admin: BrowserContext, login_stack: LoginStack, study_run: str
) -> None:
    page = admin.new_page()
    frame = open_tab(page, task_page(login_stack, "ui_study", study_run, "tune"))
    assert "JOB_STATE_SUCCEEDED" in frame.locator("main h1").inner_text()
    facts = dict(
        zip(
            frame.locator("dl.study dt").all_inner_texts(),
            frame.locator("dl.study dd").all_inner_texts(),
            strict=True,
        )
    )
    best = facts.pop("best trial")
    assert facts == {
        "metric": "score (maximize)",
        "algorithm": "GRID_SEARCH",
        "trials": "6/6 ended, 3 at a time",
    }
    assert best.startswith("trial 4: score = ") and best.endswith(" (x=4)")
    # the study and its chart come first: in view on the task's page, unscrolled
    chart = frame.locator("#trial-chart").bounding_box()
    assert chart is not None and chart["y"] + chart["height"] <= VIEWPORT["height"]
    points = frame.locator("svg circle")
    assert points.count() == 6
    classes = [points.nth(i).get_attribute("class") for i in range(6)]
    assert classes == ["trial", "trial", "trial", "trial best", "trial", "trial"]  # x = 4 is the best
    assert frame.locator("svg polyline.trial-steps").count() == 6  # each trial's steps
    trials = table_rows(frame, "#trials-table")
    assert [row[0] for row in trials] == ["1", "2", "3", "4", "5", "6"]
    assert frame.locator("tr.best td >> nth=0").inner_text() == "4"

    standalone = admin.new_page()
    standalone.set_viewport_size({"width": 1000, "height": 1000})
    standalone.goto(view_url(login_stack, "ui_study", study_run, "tune"))
    top = standalone.locator("h2#study").bounding_box()
    table = standalone.locator("#trials-table").bounding_box()
    assert top is not None and table is not None
    clip = {"x": 0, "y": top["y"] - 8, "width": 1000, "height": table["y"] + table["height"] - top["y"] + 16}
    shoot(standalone, "ui-trials.png", full_page=True, clip=clip)
    standalone.close()


def test_the_view_follows_airflows_dark_mode_and_timezone(
    admin: BrowserContext, login_stack: LoginStack, study_run: str
) -> None:
    from zoneinfo import ZoneInfo

    from airflow_vertex_dist.ui import times

    page = admin.new_page()
    page.goto(f"{login_stack.api_url}/")
    # what Airflow's UI keeps when the user picks dark mode and a timezone (next-themes' "theme";
    # its settings' "timezone", JSON)
    page.evaluate("localStorage.setItem('theme', 'dark'); localStorage.setItem('timezone', '\"Asia/Tokyo\"')")
    frame = open_tab(page, task_page(login_stack, "ui_study", study_run, "tune"))
    assert page.evaluate("document.documentElement.classList.contains('dark')")  # Airflow is dark
    frame.wait_for_function("document.documentElement.dataset.theme === 'dark'")
    assert frame.evaluate("getComputedStyle(document.body).backgroundColor") == DARK_BG
    # its form controls too: the log-level <select> is not left light
    assert frame.evaluate("getComputedStyle(document.getElementById('severity')).backgroundColor") == DARK_BG
    created = frame.locator("#timeline-table time").first
    when = times.parse(created.get_attribute("datetime"))
    assert when is not None
    assert created.inner_text() == when.astimezone(ZoneInfo("Asia/Tokyo")).strftime("%Y-%m-%d %H:%M:%S GMT+9")
    shoot(page, "ui-dark.png")
    # Airflow switched back to light: the open view follows, unreloaded
    frame.evaluate("window.avdMark = 'not reloaded'")
    page.evaluate("document.documentElement.classList.replace('dark', 'light')")
    frame.wait_for_function("document.documentElement.dataset.theme === 'light'")
    assert frame.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    assert frame.evaluate("window.avdMark") == "not reloaded"


def test_a_ladders_rungs_are_in_the_tab_and_its_jobs_in_the_list(
    admin: BrowserContext, login_stack: LoginStack
) -> None:
    stack = login_stack
    stack.set_capacity(STOCKED_OUT)
    try:
        run_id = stack.trigger("ui_ladder")
        assert stack.wait_run("ui_ladder", run_id, timeout=600) == "success"
    finally:
        stack.set_capacity(UNLIMITED)
    jobs = {
        str(j["name"]).rsplit("/", 1)[1]: j
        for j in [*stack.emulator_jobs(), *stack.emulator_jobs(location="us-east1")]
        if j.get("displayName") == "ui-ladder"
    }
    page = admin.new_page()
    frame = open_tab(page, task_page(stack, "ui_ladder", run_id, "train"))
    rows = table_rows(frame, "#rungs-table")
    assert [row[:2] for row in rows] == [("1 (a100)", "us-central1"), ("2 (l4-east)", "us-east1")]
    assert {rows[0][2], rows[1][2]} == set(jobs)
    assert rows[0][3].startswith("left: ") and "stockout" in rows[0][3].lower()
    assert rows[1][3] == "SUCCEEDED" and rows[1][4].endswith("s")
    assert rows[0][5] == "$4.22/h" and rows[1][5] == "$0.98/h"  # the catalog's prices
    assert frame.locator("#rungs-table").bounding_box()["y"] < VIEWPORT["height"]  # type: ignore[index]
    shoot(page, "ui-ladder.png")

    page.goto(f"{stack.api_url}/")
    open_from_menu(page, "Browse", "Vertex AI jobs", "**/plugin/vertex_ai_jobs")
    listing = frame_of(page, "Vertex AI jobs")
    row = listing.locator("#jobs-table tr", has=listing.get_by_role("link", name=rows[1][2]))
    cells = row.locator("td").all_inner_texts()
    assert cells[1:4] == ["SUCCEEDED", "custom job", "ui-ladder"] and cells[4].endswith("s")
    assert f"rung 1: {rows[0][2]} (left: " in cells[0]
    shoot(page, "ui-jobs.png")


def test_a_user_who_may_not_read_the_dag_is_refused(
    browser: Browser, admin: BrowserContext, login_stack: LoginStack, study_run: str
) -> None:
    stack = login_stack
    url = view_url(stack, "ui_study", study_run, "tune")
    (job,) = stack.emulator_jobs(kind="hyperparameterTuningJobs")
    job_id = str(job["name"]).rsplit("/", 1)[1]

    # the admin's jobs list, from the Browse menu, lists the study's job
    page = admin.new_page()
    page.goto(f"{stack.api_url}/")
    open_from_menu(page, "Browse", "Vertex AI jobs", "**/plugin/vertex_ai_jobs")
    jobs = frame_of(page, "Vertex AI jobs")
    jobs.get_by_role("link", name=job_id).wait_for()

    nobody = login(browser, stack, "nobody")
    page = nobody.new_page()
    for target in (url, url + "?fragment=1"):
        response = page.goto(target)
        assert response is not None and response.status == 403
        text = page.content()
        assert job_id not in text and "hyperparameterTuningJobs" not in text and "ui-study" not in text
    response = page.goto(f"{stack.api_url}{PREFIX}/jobs")
    assert response is not None and response.status == 200
    assert page.locator("main").inner_text().endswith("No job yet.")
    assert job_id not in page.content()
    nobody.close()

    anonymous = browser.new_context()
    page = anonymous.new_page()
    for target in (url, f"{stack.api_url}{PREFIX}/jobs"):
        response = page.goto(target)
        assert response is not None and response.status == 401
        assert job_id not in page.content()
    anonymous.close()
