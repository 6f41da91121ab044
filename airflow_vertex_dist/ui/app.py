"""The job view's FastAPI app, mounted by the plugin under ``PREFIX`` in Airflow's API server.

* ``GET {PREFIX}/ti/{dag_id}/{run_id}/{task_id}/{map_index}``: the page of the job of one task
  instance (``?fragment=1``: only its ``<main>``, what the page's refresh fetches); ``map_index`` is
  ``-1`` or Airflow UI's unfilled ``{MAP_INDEX}`` for a task that is not mapped.
* ``GET {PREFIX}/jobs``: the newest jobs of this provider's tasks the user may read (the nav entry).

Authorization is Airflow's: a plugin's FastAPI endpoints are not protected by Airflow's auth by
default, so every route depends on the API server's own dependencies (``_compat.ui_auth_dependencies``):
no login is 401, a user whose auth manager does not let them read the DAG's task instances gets 403
and nothing of the job; the jobs list holds only the DAGs the user may read.

Which job: the one the task's owner record (XCom ``vertex_job_owner``) names, else its ``vertex_job``
XCom; read with the task's own connection and impersonation chain, from the task instance's rendered
template fields (which no REST API call can change), never those of an XCom. An XCom is only a
candidate: the job is shown when its labels say it is this task instance's, or when it is the job the
task (a sensor) watches by its rendered ``job_name`` (``links.ownership_problem``); else the page is a
409 naming the mismatch, with nothing of that job. Data comes through the provider's hooks: one
JobService Get and one Cloud Logging ``entries.list`` per job at most every ``REFRESH_S`` seconds,
whatever the number of pages open on it (``JobCache``), and all the view's log reads in one API
server process together at most ``LOG_READS_PER_MINUTE`` a minute.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

from airflow_vertex_dist.links import (
    LINK_XCOM_KEY,
    OWNER_XCOM_KEY,
    OwnedJob,
    ownership_problem,
    task_owned_job,
)
from airflow_vertex_dist.ui import model, times
from airflow_vertex_dist.ui.ledger import ledger_of, ledger_view, returned_ledger, run_totals
from airflow_vertex_dist.ui.listing import list_row, one_row_per_job
from airflow_vertex_dist.ui.page import REFRESH_S, JobPage, LogView, index_page, job_page, main_section
from airflow_vertex_dist.ui.rungs import ladder_steps, ladder_walk, rung_rows

__all__ = [
    "LOG_LINES",
    "LOG_READS_PER_MINUTE",
    "PREFIX",
    "UNMAPPED",
    "JobCache",
    "ReadWindow",
    "create_app",
    "find_job",
    "job_problem",
    "map_index_of",
    "web_url",
]

log = logging.getLogger(__name__)

#: where the plugin mounts the app in the API server
PREFIX = "/vertex-dist"
#: the view's Cloud Logging reads a minute, per API server process, all pages together: Cloud
#: Logging allows 60 ``entries.list`` a minute per project and the triggers' poller takes 50 by
#: default (``[vertex_dist] log_reads_per_minute``), leaving 10.
LOG_READS_PER_MINUTE = 10
#: the newest lines read per job and refresh (one ``entries.list`` page)
LOG_LINES = 200
#: what Airflow's UI leaves in a task-instance view's href on the page of a task that is not mapped:
#: it fills ``{MAP_INDEX}`` on a mapped task instance's page only
UNMAPPED = "{MAP_INDEX}"


class ReadWindow:
    """At most ``per_minute`` grants in any 60 s (a sliding window); ``clock`` for tests."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._times: deque[float] = deque()
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            now = self._clock()
            while self._times and now - self._times[0] >= 60.0:
                self._times.popleft()
            if len(self._times) >= self.per_minute:
                return False
            self._times.append(now)
            return True


class JobCache:
    """The job (Get) and its log lines (one ``entries.list``) per job name, each read again at most
    every ``ttl_s`` seconds, whatever the number of pages asking; log reads also take a grant from
    ``window``. Calls counts the reads made (``gets``, ``log_reads``)."""

    def __init__(
        self,
        ttl_s: float = REFRESH_S,
        window: ReadWindow | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.window = window or ReadWindow(LOG_READS_PER_MINUTE, clock)
        self._clock = clock
        self._jobs: dict[str, tuple[float, dict[str, Any]]] = {}
        self._logs: dict[str, tuple[float, LogView]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.calls = {"gets": 0, "log_reads": 0}

    def _job_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(name, threading.Lock())

    def job(self, owned: OwnedJob) -> dict[str, Any]:
        with self._job_lock(owned.name):
            hit = self._jobs.get(owned.name)
            # an ended job does not change: read once
            if hit and (self._clock() - hit[0] < self.ttl_s or not model.is_running(hit[1])):
                return hit[1]
            with owned.hook() as hook:
                job = dict(hook.get_job(owned.name))
            self.calls["gets"] += 1
            self._jobs[owned.name] = (self._clock(), job)
            return job

    def logs(self, owned: OwnedJob, job: dict[str, Any]) -> LogView:
        key = owned.name + "#logs"
        with self._job_lock(key):
            hit = self._logs.get(owned.name)
            fresh = hit is not None and (
                self._clock() - hit[0] < self.ttl_s or hit[1].note.startswith("final")
            )
            if hit is not None and fresh:
                return hit[1]
            if not self.window.take():
                view = hit[1] if hit else LogView()
                return LogView(
                    view.lines,
                    f"Log lines not read again yet: the view's budget of "
                    f"{self.window.per_minute} Cloud Logging reads a minute is spent.",
                )
            view = read_log_view(owned, job)
            self.calls["log_reads"] += 1
            self._logs[owned.name] = (self._clock(), view)
            return view


def read_log_view(owned: OwnedJob, job: dict[str, Any]) -> LogView:
    """The newest ``LOG_LINES`` replica lines of the job, every replica and severity, in one
    ``entries.list`` call through the provider's ``VertexLogsHook``, grouped by replica (a trial's
    lines under ``trial <id> / <replica>``), oldest first."""
    from airflow_vertex_dist.hooks.logs import VertexLogsHook, jobs_filter
    from airflow_vertex_dist.jobs.dicts import parse_job_name

    where = parse_job_name(owned.name)
    hook = VertexLogsHook(
        owned.conn_id, project_id=where.project, impersonation_chain=list(owned.impersonation_chain) or None
    )
    try:
        lines, _ = hook.list_page(
            jobs_filter([where.job_id], selection="all"), page_size=LOG_LINES, descending=True
        )
    except Exception as exc:  # the page still shows the job; the note says why the lines are missing
        return LogView({}, f"Log lines could not be read: {type(exc).__name__}: {exc}")
    finally:
        hook.close()
    grouped: dict[str, list[tuple[str, str, str]]] = {}
    for line in reversed(lines):
        key = f"trial {line.trial_id} / {line.replica}" if line.trial_id else line.replica
        grouped.setdefault(key, []).append((line.severity, line.timestamp, line.text))
    ended = "final: " if not model.is_running(job) else ""
    return LogView(grouped, f"{ended}The newest {LOG_LINES} lines at most, read {time.strftime('%H:%M:%S')}.")


def find_job(dag_id: str, run_id: str, task_id: str, map_index: int) -> tuple[OwnedJob, str] | None:
    """The job the task instance's XComs name (its owner record's, else its ``vertex_job`` link's),
    with the task's own connection and impersonation chain (its rendered template fields), and its
    console URL (``""`` when not pushed); None without a job name or a connection. The job is still
    to be checked against the task instance (``job_problem``)."""
    from airflow_vertex_dist._compat import rendered_task_fields, xcom_rows

    def one(key: str) -> dict[str, Any] | None:
        rows = xcom_rows(key, dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=map_index, limit=1)
        return rows[0] if rows else None

    link = one(LINK_XCOM_KEY)
    link_value = link["value"] if link and isinstance(link["value"], dict) else {}
    console = web_url(link_value.get("console_url"))
    owner = one(OWNER_XCOM_KEY)
    record = OwnedJob.from_record(owner["value"]) if owner else None
    name = record.name if record is not None else link_value.get("name")
    if not isinstance(name, str):
        return None
    owned = task_owned_job(name, rendered_task_fields(dag_id, run_id, task_id, map_index))
    return None if owned is None else (owned, console)


def job_problem(job: dict[str, Any], dag_id: str, run_id: str, task_id: str, map_index: int) -> str | None:
    """Why the job is not the task instance's to show (``links.ownership_problem``; a sensor's watched
    job is its rendered ``job_name``), or None."""
    from airflow_vertex_dist._compat import rendered_task_fields

    if ownership_problem(job, dag_id, task_id, run_id, map_index) is None:
        return None
    watched = (rendered_task_fields(dag_id, run_id, task_id, map_index) or {}).get("job_name")
    return ownership_problem(
        job, dag_id, task_id, run_id, map_index, watched=watched if isinstance(watched, str) else None
    )


def web_url(value: Any) -> str:
    """``value`` when it is an http(s) address, else ``""``: the console link comes from an XCom, which
    any task of the DAG can write, and a ``javascript:`` or ``data:`` address must never become a link."""
    text = str(value or "")
    return text if urlsplit(text).scheme.lower() in ("http", "https") and urlsplit(text).netloc else ""


def output_url(uri: str, console_url: str) -> str:
    """Where the output directory opens: the Cloud console's storage browser for Vertex AI; none for
    the emulator (its own job page shows the local directory)."""
    if not uri.startswith("gs://") or not console_url.startswith("https://console.cloud.google.com/"):
        return ""
    return "https://console.cloud.google.com/storage/browser/" + quote(uri.removeprefix("gs://"))


def task_log_url(dag_id: str, run_id: str, task_id: str, map_index: int) -> str:
    """The task instance's page in Airflow's UI (its log tab)."""
    path = f"/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}/tasks/{quote(task_id, safe='')}"
    return path + (f"/mapped/{map_index}" if map_index >= 0 else "")


def map_index_of(text: str) -> int:
    """The map index of a view's path: ``-1`` for ``UNMAPPED`` (a task that is not mapped), else the
    integer; ValueError for anything else."""
    if text == UNMAPPED:
        return -1
    index = int(text)
    if index < -1:
        raise ValueError(f"map index {index} is below -1")
    return index


def read_other(cache: JobCache, owned: OwnedJob) -> Callable[[str], dict[str, Any] | None]:
    """Reads another job of the same task (a ladder's rung left) with the task's credentials,
    through ``cache``; None when it cannot be read."""

    def read(name: str) -> dict[str, Any] | None:
        try:
            return cache.job(OwnedJob(name, owned.conn_id, owned.impersonation_chain))
        except Exception:  # the row still shows the rung, without its price
            return None

    return read


def listed(rows: list[dict[str, Any]], cache: JobCache) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The jobs list's rows (``listing.list_row``), one per job (``listing.one_row_per_job``): each
    job read through ``cache`` (8 at a time; an ended job is read once) and shown only when it is the
    task's (``job_problem``), with the rungs its ladder left; and the cost totals of each DAG run
    listed (``ledger.run_totals``: a task's returned ledger, else its job's entry)."""
    from concurrent.futures import ThreadPoolExecutor

    zone = times.ui_timezone()

    def one(row: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, str, list[Any]]]:
        ti = (row["dag_id"], row["run_id"], row["task_id"], int(row["map_index"]))
        found = find_job(*ti)
        job = read_other(cache, found[0])(found[0].name) if found else None
        if job is not None and job_problem(job, *ti) is not None:
            job = None  # an XCom naming another task's job: nothing of that job in this row
        # only a ladder's job carries its rung label: no XCom read for any other
        on_ladder = job is not None and model.capacity_rung(job)
        steps = ladder_steps(*ti) if on_ladder else []
        entries = ledger_of(returned_ledger(*ti), job, [], lambda _: None)["jobs"] if job else []
        return list_row(row, job, steps, zone=zone), (row["dag_id"], row["run_id"], entries)

    with ThreadPoolExecutor(max_workers=8) as pool:
        done = list(pool.map(one, one_row_per_job(rows)))
    return [shown for shown, _ in done], run_totals(costs for _, costs in done)


def create_app(cache: JobCache | None = None) -> Any:
    """The FastAPI app (a new one per call; ``cache``: the job cache it reads through)."""
    from fastapi import Depends, FastAPI, HTTPException
    from fastapi.responses import HTMLResponse

    from airflow_vertex_dist._compat import readable_dag_ids, ui_auth_dependencies, xcom_rows

    read_task_instances, get_user = ui_auth_dependencies()
    jobs = cache or JobCache()
    app = FastAPI(title="Vertex AI jobs", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.cache = jobs

    @app.get("/ti/{dag_id}/{run_id}/{task_id}/{map_index}", dependencies=[Depends(read_task_instances)])
    def task_instance_view(
        dag_id: str, run_id: str, task_id: str, map_index: str, fragment: int = 0
    ) -> HTMLResponse:
        try:
            index = map_index_of(map_index)
        except ValueError:
            raise HTTPException(404, "No such task instance: the map index is not an integer.") from None
        found = find_job(dag_id, run_id, task_id, index)
        if found is None:
            raise HTTPException(404, "This task instance has no Vertex AI job (yet).")
        owned, console = found
        job = jobs.job(owned)
        problem = job_problem(job, dag_id, run_id, task_id, index)
        if problem is not None:  # nothing of that job: not its state, not its lines
            log.error("job view %s.%s run %s: %s", dag_id, task_id, run_id, problem)
            raise HTTPException(409, f"Not shown: {problem}.")
        steps, names = ladder_walk(dag_id, run_id, task_id, index) if model.capacity_rung(job) else ([], {})
        page = JobPage(
            job=job,
            dag_id=dag_id,
            run_id=run_id,
            task_id=task_id,
            map_index=index,
            console_url=console,
            task_log_url=task_log_url(dag_id, run_id, task_id, index),
            output_url=output_url(model.output_uri(job), console),
            logs=jobs.logs(owned, job),
            rungs=rung_rows(job, steps, read_other(jobs, owned), names=names),
            ledger=ledger_view(
                ledger_of(
                    returned_ledger(dag_id, run_id, task_id, index),
                    job,
                    steps,
                    read_other(jobs, owned),
                    names,
                )
            ),
            zone=times.ui_timezone(),
        )
        body = main_section(page) if fragment else job_page(page)
        return HTMLResponse(body, headers={"Cache-Control": "no-store"})

    @app.get("/jobs")
    def recent_jobs(user: Any = Depends(get_user)) -> HTMLResponse:  # noqa: B008 - FastAPI's way
        rows = [
            {**row, "job_name": str(row["value"].get("name", ""))}
            for row in xcom_rows(LINK_XCOM_KEY, dag_ids=readable_dag_ids(user), limit=100)
            if isinstance(row["value"], dict)
        ]
        shown, runs = listed(rows, jobs)
        return HTMLResponse(
            index_page(shown, prefix=PREFIX, runs=runs), headers={"Cache-Control": "no-store"}
        )

    return app
