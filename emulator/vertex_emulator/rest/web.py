"""The routes of the emulator's web pages (the HTML: the pages package): ``/web/<job>/<replica key>``, a
replica's web access page (JSON with ``?format=json``); ``/ui/<job>``, a job's page; ``/ui/`` (or
``/``), the index of every job, newest first (``INDEX_LIMIT``). Each returns the body and its
content type.
"""

from __future__ import annotations

import json
import re
from typing import Any

from vertex_emulator import pages
from vertex_emulator.jobservice.methods import ApiError
from vertex_emulator.jobservice.service import JobService
from vertex_emulator.rest.v1 import JOB_NAME

__all__ = ["HTML", "INDEX_LIMIT", "JSON", "index", "job_page", "replica_page"]

#: jobs the index page (``/ui/``) lists, newest first.
INDEX_LIMIT = 500
HTML = "text/html; charset=utf-8"
JSON = "application/json; charset=utf-8"
_WEB_RE = re.compile(rf"/web/(?P<name>{JOB_NAME})/(?P<key>[^/]+)")
_UI_RE = re.compile(rf"/ui/(?P<name>{JOB_NAME})")


def _job(service: JobService, name: str) -> dict[str, Any]:
    try:
        return service.store.get(name)
    except KeyError:
        raise ApiError("NOT_FOUND", f"{name} does not exist.") from None


def replica_page(service: JobService, path: str, query: dict[str, list[str]]) -> tuple[bytes, str]:
    """``/web/<job resource name>/<replica key>``: the replica's state and log tail."""
    match = _WEB_RE.fullmatch(path)
    if match is None:
        raise ApiError("NOT_FOUND", f"{path}: expected /web/<job resource name>/<replica key>")
    name, key = match["name"], match["key"]
    job = _job(service, name)
    view = service.runner.replica_view(name, key)
    if view is None:
        raise ApiError("NOT_FOUND", f"{name} has no replica {key}")
    if query.get("format", [""])[-1] == "json":
        data = {"job": name, "job_state": job.get("state"), "replica": key, **view}
        return json.dumps(data, indent=2).encode() + b"\n", JSON
    return pages.replica_page(name, key, job, view), HTML


def job_page(service: JobService, path: str) -> tuple[bytes, str]:
    """``/ui/<job resource name>``: the job's page."""
    match = _UI_RE.fullmatch(path)
    if match is None:
        raise ApiError("NOT_FOUND", f"{path}: expected /ui/<job resource name>")
    name = match["name"]
    # the runner's configuration says where gs:// lives locally (a runner without one: no local path)
    gcs_root = getattr(getattr(service.runner, "config", None), "gcs_root", None)
    runner = service.runner
    return pages.job_page(name, _job(service, name), runner.replica_view, gcs_root=gcs_root), HTML


def index(service: JobService) -> tuple[bytes, str]:
    """``/ui/``: every job, newest first, at most ``INDEX_LIMIT``."""
    jobs = service.store.recent(INDEX_LIMIT + 1)
    return pages.index_page(jobs, limit=INDEX_LIMIT), HTML
