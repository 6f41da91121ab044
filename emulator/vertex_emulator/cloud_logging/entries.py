"""Cloud Logging ``LogEntry`` objects for the lines of a job, shaped as Vertex AI writes them.

Every entry's monitored resource is ``ml_job`` with the labels ``project_id``, ``job_id`` and
``task_name`` (Cloud Logging's monitored-resource list, ``ml_job``; the gcloud CLI's ``ai
custom-jobs stream-logs`` filters on ``resource.labels.job_id`` and prints ``task_name``,
``command_lib/ai/log_util.py``). A tuning trial's lines carry the tuning job's id as ``job_id`` and
the trial id in the entry label ``ml.googleapis.com/trial_id``.

* A replica's line (``task_name`` = the replica key, ``workerpool0-0``): ``logName``
  ``projects/<project>/logs/<replica key>``; severity by stream, INFO for stdout and ERROR for
  stderr; the payload is ``jsonPayload`` ``{"message": <the line>, "levelname": "INFO"|"ERROR",
  "attrs": {"tag": <replica key>}}``. A line that is itself JSON is *not* parsed: it is the
  ``message`` text, its own ``severity`` field ignored. Best reading of three public reports of real
  entries: googleapis/python-aiplatform#629 (a JSON log line of a Vertex job shown as
  ``jsonPayload`` with ``levelname`` and ``message`` "contains the full payload", not parsed),
  viamrobotics/api#534 (a training job's entry ``{"attrs": {"tag": "workerpool0-0"}, "levelname":
  "ERROR", "message": "... I tensorflow/..."}``: an info line of TensorFlow's stderr, ERROR) and
  a public test fixture of Vertex pipeline ``ml_job`` messages with the same three keys; the gcloud
  CLI reads ``jsonPayload.message`` first (log_util.py, ``_EntryToDict``).
* A ``service`` line, Vertex AI's own about the job ("Waiting for job to be provisioned.", "Job is
  running."...; runtime/service_log.py): ``task_name`` ``service``, ``textPayload``, ``logName``
  ``projects/<project>/logs/ml.googleapis.com%2F<job id>`` and the entry label
  ``ml.googleapis.com/endpoint`` (an entry quoted in GoogleCloudPlatform/cortex-data-foundation#42).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from vertex_emulator.core.jobkinds import SEVERITIES
from vertex_emulator.core.timefmt import format_rfc3339_nanos
from vertex_emulator.runtime.log_records import SERVICE_KEY, Record

__all__ = ["RESOURCE_TYPE", "TRIAL_LABEL", "Entry", "JobMeta", "record_entry", "replica_line_entry"]

RESOURCE_TYPE = "ml_job"
TRIAL_LABEL = "ml.googleapis.com/trial_id"
ENDPOINT_LABEL = "ml.googleapis.com/endpoint"
_SEVERITY_NAMES = {number: name for name, number in SEVERITIES.items()}
_STREAM_LEVELS = {"stdout": "INFO", "stderr": "ERROR"}


@dataclass(frozen=True)
class JobMeta:
    """Who a job's lines are logged under."""

    project: str
    job_id: str  # the id Vertex AI logs under: the tuning job's for a trial
    trial_id: str | None


@dataclass
class Entry:
    """One ``LogEntry``."""

    timestamp: int
    receive: int
    insert_id: str
    severity: int
    task: str  # resource.labels.task_name: a replica key or "service"
    log_id: str  # the logName's LOG_ID, not yet percent-encoded
    meta: JobMeta
    text: str | None = None
    json_payload: dict[str, Any] | None = None
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def log_name(self) -> str:
        return _log_name(self.meta.project, self.log_id)

    def fields(self) -> Mapping[str, Any]:
        """The field map the filter evaluates (built when a field beyond the common ones is asked for)."""
        return _Fields(self)

    def all_fields(self) -> dict[str, Any]:
        """Every field of the entry, by path."""
        meta = self.meta
        out: dict[str, Any] = {
            "resource.type": RESOURCE_TYPE,
            "resource.labels.project_id": meta.project,
            "resource.labels.job_id": meta.job_id,
            "resource.labels.task_name": self.task,
            "logName": self.log_name,
            "severity": self.severity,
            "timestamp": self.timestamp,
            "receiveTimestamp": self.receive,
            "insertId": self.insert_id,
        }
        for key, value in self.labels.items():
            out[f"labels.{key}"] = value
        if self.json_payload is not None:
            _flatten(self.json_payload, "jsonPayload", out)
        else:
            out["textPayload"] = self.text
        return out

    def as_json(self) -> dict[str, Any]:
        """The entry in the v2 JSON form (``LogEntry``)."""
        meta = self.meta
        entry: dict[str, Any] = {
            "logName": self.log_name,
            "resource": {
                "type": RESOURCE_TYPE,
                "labels": {"project_id": meta.project, "job_id": meta.job_id, "task_name": self.task},
            },
            "timestamp": format_rfc3339_nanos(self.timestamp),
            "receiveTimestamp": format_rfc3339_nanos(self.receive),
            "severity": _SEVERITY_NAMES.get(self.severity, "DEFAULT"),
            "insertId": self.insert_id,
        }
        if self.labels:
            entry["labels"] = dict(self.labels)
        if self.json_payload is not None:
            entry["jsonPayload"] = self.json_payload
        else:
            entry["textPayload"] = self.text
        return entry


class _Fields(Mapping[str, Any]):
    """An entry's field map, the common fields answered directly and the rest built on first use; what
    the filter derives from it (a field's case-folded text) is kept for the entry's other terms."""

    __slots__ = ("_entry", "_all", "_memo")

    def __init__(self, entry: Entry) -> None:
        self._entry = entry
        self._all: dict[str, Any] | None = None
        self._memo: dict[str, Any] | None = None

    def _full(self) -> dict[str, Any]:
        if self._all is None:
            self._all = self._entry.all_fields()
        return self._all

    def get(self, key: str, default: Any = None) -> Any:
        entry = self._entry
        if key == "resource.labels.job_id":
            return entry.meta.job_id
        if key == "resource.labels.task_name":
            return entry.task
        if key == "severity":
            return entry.severity
        if key == "timestamp":
            return entry.timestamp
        if key == "resource.type":
            return RESOURCE_TYPE
        return self._full().get(key, default)

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key, _MISSING) is not _MISSING

    def __iter__(self) -> Iterator[str]:
        return iter(self._full())

    def __len__(self) -> int:
        return len(self._full())

    def values(self) -> Any:
        return self._full().values()

    def cached(self, key: str, compute: Callable[[Mapping[str, Any]], Any]) -> Any:
        """``compute(self)``, computed once per entry for ``key``."""
        memo = self._memo
        if memo is None:
            memo = self._memo = {}
        value = memo.get(key, _MISSING)
        if value is _MISSING:
            value = memo[key] = compute(self)
        return value


_MISSING: Any = object()


@lru_cache(maxsize=4096)
def _log_name(project: str, log_id: str) -> str:
    return f"projects/{project}/logs/{quote(log_id, safe='')}"


def _flatten(value: dict[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for key, item in value.items():
        if isinstance(item, str | int | float | bool):
            out[f"{prefix}.{key}"] = item
        elif isinstance(item, dict):
            _flatten(item, f"{prefix}.{key}", out)


def _trial_labels(meta: JobMeta) -> dict[str, str]:
    return {TRIAL_LABEL: meta.trial_id} if meta.trial_id is not None else {}


def replica_line_entry(text: str, stream: str, *, t: int, insert_id: str, key: str, meta: JobMeta) -> Entry:
    """The entry of one line replica ``key`` printed on ``stream`` (``stdout`` or ``stderr``)."""
    level = _STREAM_LEVELS.get(stream, "INFO")
    return Entry(
        timestamp=t,
        receive=t,
        insert_id=insert_id,
        severity=SEVERITIES[level],
        task=key,
        log_id=key,
        meta=meta,
        json_payload={"message": text, "levelname": level, "attrs": {"tag": key}},
        labels=_trial_labels(meta),
    )


def record_entry(record: Record, *, dir_id: str, key: str, meta: JobMeta) -> Entry:
    """The entry of a structured log's record (a replica line or a ``service`` line)."""
    insert_id = f"{dir_id}.{key}.{record.index + 1:09d}"
    if key != SERVICE_KEY:
        return replica_line_entry(
            record.text, record.stream, t=record.t, insert_id=insert_id, key=key, meta=meta
        )
    severity = SEVERITIES.get((record.severity or "INFO").upper(), SEVERITIES["INFO"])
    return Entry(
        timestamp=record.t,
        receive=record.t,
        insert_id=insert_id,
        severity=severity,
        task=SERVICE_KEY,
        log_id=f"ml.googleapis.com/{meta.job_id}",
        meta=meta,
        text=record.text,
        labels={ENDPOINT_LABEL: "", **record.labels, **_trial_labels(meta)},
    )
