"""A real job history as a scenario (``python -m vertex_emulator.scenario from-history``): Vertex AI's
own records, the JSON of a ``customJobs`` List (``{"customJobs": [...], "nextPageToken": ...}``, one
file a page) and optionally the Cloud Logging ``entries.list`` JSON of those jobs, turned into one
``job_outcome`` event per ended job that plays it as it went: how long it queued (``createTime`` ->
``startTime``) and ran (``startTime`` -> ``endTime``), its end state, its error (code and message, the
replica's exit as Vertex AI worded it), and its first log lines (bounded).

Each event matches its job alone, in the history's order: the display name exactly, every label equal,
``first: 1``, all in force from time 0, so two jobs of the same name and labels are played in the
order they were created. When each job was created (relative to the first) is written beside its
event: a scenario plays outcomes, the DAG (or test) that submits the jobs sets when they are created.

Read as the loader reads a scenario (YAML's loader keeps each node's line, bounded by ``MAX_BYTES``),
so bad input is told as ``page1.json:12: customJobs[3].createTime: ...`` (the file, the line, the JSON
path, the rule).
"""

from __future__ import annotations

import fnmatch
import glob
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from vertex_emulator.core.timefmt import parse_rfc3339
from vertex_emulator.core.validation import field_path
from vertex_emulator.scenario.loader import MAX_BYTES, ScenarioError, _document, parse_scenario

__all__ = ["DEFAULT_LOG_LINES", "HistoryJob", "history_scenario", "read_history", "read_logs"]

#: log lines kept per job unless told (a job_outcome holds at most 1000)
DEFAULT_LOG_LINES = 50
_MAX_TEXT = 4096
_ENDED = {
    "JOB_STATE_SUCCEEDED": "SUCCEEDED",
    "JOB_STATE_FAILED": "FAILED",
    "JOB_STATE_CANCELLED": "CANCELLED",
}
_LISTS = ("customJobs", "hyperparameterTuningJobs")


@dataclass
class HistoryJob:
    """One job of a history: where it was read (``source``: file and JSON path), its name, display
    name, labels, state and error, and its times (seconds since the epoch; ``start`` None when it
    never ran)."""

    source: str
    kind: str
    name: str
    display_name: str
    labels: dict[str, str]
    state: str
    created: float
    start: float | None
    end: float
    error_code: int | None = None
    error_message: str | None = None
    log_lines: list[str] = field(default_factory=list)

    @property
    def queued_s(self) -> float:
        return (self.end if self.start is None else self.start) - self.created

    @property
    def ran_s(self) -> float:
        return 0.0 if self.start is None else self.end - self.start


class _Reader:
    """Reads one file's JSON, failing with ``file:line: path: rule``."""

    def __init__(self, path: Path) -> None:
        self.name = path.name
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
        if len(raw) > MAX_BYTES:
            raise ScenarioError(f"{self.name}: larger than {MAX_BYTES} bytes")
        try:
            self.data, self._walk = _document(raw.decode(), self.name)
        except UnicodeDecodeError:
            raise ScenarioError(f"{self.name}: not UTF-8 text") from None
        if not isinstance(self.data, dict):
            raise ScenarioError(f"{self.name}:1: must be a JSON object")

    def fail(self, loc: tuple[int | str, ...], rule: str) -> ScenarioError:
        where = field_path(loc) or "(the file)"
        return ScenarioError(f"{self.name}:{self._walk.line_of(loc)}: {where}: {rule}")

    def items(self, key: str) -> list[Any]:
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise self.fail((key,), "must be a list")
        return value

    def text(
        self, item: dict[str, Any], loc: tuple[int | str, ...], key: str, default: str | None = None
    ) -> str:
        value = item.get(key, default)
        if not isinstance(value, str):
            raise self.fail((*loc, key), "must be a string" if key in item else "is missing")
        return value

    def time(self, item: dict[str, Any], loc: tuple[int | str, ...], key: str) -> float:
        text = self.text(item, loc, key)
        try:
            when: datetime = parse_rfc3339(text)
        except ValueError:
            raise self.fail((*loc, key), f"must be an RFC 3339 time (got {text!r})") from None
        return when.timestamp()


def _job(reader: _Reader, kind: str, index: int, item: Any) -> HistoryJob | None:
    loc: tuple[int | str, ...] = (kind, index)
    if not isinstance(item, dict):
        raise reader.fail(loc, "must be a job object")
    state = reader.text(item, loc, "state")
    if state not in _ENDED:
        return None  # still running (or paused): nothing to reproduce yet
    labels = item.get("labels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise reader.fail((*loc, "labels"), "must map names to strings")
    start = reader.time(item, loc, "startTime") if "startTime" in item else None
    job = HistoryJob(
        source=f"{reader.name}: {field_path(loc)}",
        kind=kind,
        name=reader.text(item, loc, "name"),
        display_name=reader.text(item, loc, "displayName", ""),
        labels=dict(labels),
        state=state,
        created=reader.time(item, loc, "createTime"),
        start=start,
        end=reader.time(item, loc, "endTime"),
    )
    if not job.created <= (job.start if job.start is not None else job.end) <= job.end:
        raise reader.fail(loc, "createTime <= startTime <= endTime must hold")
    error = item.get("error")
    if error is not None:
        if not isinstance(error, dict) or not isinstance(error.get("code", 0), int):
            raise reader.fail((*loc, "error"), "must be a google.rpc.Status {code, message}")
        job.error_code = error.get("code")
        job.error_message = reader.text(error, (*loc, "error"), "message", "") or None
    return job


def read_history(paths: Sequence[Path]) -> list[HistoryJob]:
    """The ended jobs of the List answers in ``paths`` (pages, any order), oldest first."""
    jobs: list[HistoryJob] = []
    for path in paths:
        reader = _Reader(path)
        if not any(key in reader.data for key in _LISTS):
            raise reader.fail((), f"must be a List answer with {' or '.join(_LISTS)}")
        for kind in _LISTS:
            for index, item in enumerate(reader.items(kind)):
                job = _job(reader, kind, index, item)
                if job is not None:
                    jobs.append(job)
    jobs.sort(key=lambda job: (job.created, job.name))
    return jobs


def _payload(entry: dict[str, Any]) -> str | None:
    text = entry.get("textPayload")
    if isinstance(text, str):
        return text
    payload = entry.get("jsonPayload")
    message = payload.get("message") if isinstance(payload, dict) else None
    return message if isinstance(message, str) else None


def read_logs(paths: Sequence[Path], jobs: Sequence[HistoryJob]) -> None:
    """Give each job its log lines from the ``entries.list`` answers in ``paths`` (an entry is a job's
    when its ``resource.labels.job_id`` is the job's id), in timestamp order."""
    by_id = {job.name.rsplit("/", 1)[-1]: job for job in jobs}
    found: dict[str, list[tuple[str, int, str]]] = {}
    for path in paths:
        reader = _Reader(path)
        for index, entry in enumerate(reader.items("entries")):
            if not isinstance(entry, dict):
                raise reader.fail(("entries", index), "must be a LogEntry object")
            resource = entry.get("resource") or {}
            job_id = (resource.get("labels") or {}).get("job_id") if isinstance(resource, dict) else None
            text = _payload(entry)
            if job_id in by_id and text is not None:
                stamp = str(entry.get("timestamp", ""))
                found.setdefault(str(job_id), []).append((stamp, len(found.get(str(job_id), [])), text))
    for job_id, lines in found.items():
        by_id[job_id].log_lines = [text for _, _, text in sorted(lines)]


def _outcome(job: HistoryJob, max_log_lines: int, drop_labels: Sequence[str]) -> dict[str, Any]:
    outcome: dict[str, Any] = {"display_name": glob.escape(job.display_name) or "*"}
    labels = {k: v for k, v in job.labels.items() if not any(fnmatch.fnmatchcase(k, d) for d in drop_labels)}
    if labels:
        outcome["labels"] = labels
    outcome["state"] = _ENDED[job.state]
    outcome["queued"] = round(job.queued_s, 3)
    outcome["after"] = round(job.ran_s, 3)
    if job.state == "JOB_STATE_FAILED" and job.error_code is not None and 1 <= job.error_code <= 16:
        outcome["error_code"] = job.error_code
    if job.state != "JOB_STATE_SUCCEEDED" and job.error_message:
        outcome["message"] = job.error_message[:_MAX_TEXT]
    if job.log_lines and max_log_lines > 0:
        outcome["log_lines"] = [line[:_MAX_TEXT] for line in job.log_lines[:max_log_lines]]
    outcome["first"] = 1
    return outcome


def history_scenario(
    jobs: Sequence[HistoryJob],
    compression: float,
    max_log_lines: int = DEFAULT_LOG_LINES,
    drop_labels: Sequence[str] = (),
) -> str:
    """The scenario (YAML text, validated) that plays ``jobs`` at ``compression``; its rules leave out
    the labels whose keys match a glob of ``drop_labels`` (labels a rehearsal's jobs carry with other
    values: the ones that name the run that made a job)."""
    if not math.isfinite(compression):
        raise ScenarioError(f"--compression: must be a finite number (got {compression!r})")
    first = min((job.created for job in jobs), default=0.0)
    lines = [
        "# A job history as a scenario (python -m vertex_emulator.scenario from-history): each event",
        "# plays one job of the history, matched by display name, labels and order; submit the jobs",
        "# at their 'created' offsets (scenario time) to replay the history.",
        "version: 1",
        f"compression: {compression:g}",
        "timeline:" if any(job.kind == "customJobs" for job in jobs) else "timeline: []",
    ]
    for job in jobs:
        head = (
            f"{job.source}: {job.name}: created +{job.created - first:g}s, "
            f"queued {job.queued_s:g}s, ran {job.ran_s:g}s, {job.state}"
        )
        if job.kind != "customJobs":
            lines.append(f"# not played (a scenario plays CustomJobs only): {head}")
            continue
        event = {"at": 0, "job_outcome": _outcome(job, max_log_lines, drop_labels)}
        dumped = yaml.safe_dump([event], sort_keys=False, allow_unicode=True, width=100)
        lines.append(f"  # {head}")
        lines.extend(f"  {line}" for line in dumped.splitlines())
    text = "\n".join(lines) + "\n"
    parse_scenario(text, "the scenario from the history")  # the model's rules, one home
    return text
