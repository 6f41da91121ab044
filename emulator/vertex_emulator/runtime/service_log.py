"""Vertex AI's own lines about a CustomJob (``task_name`` ``service``), as the emulator writes them.

Vertex AI logs the job's progress under the task ``service`` beside the replicas' lines. The
wording below is copied from real ``gcloud ai custom-jobs stream-logs`` output published in public
repositories (2026 runs of a python package job on Vertex AI) and from the entries quoted in
GoogleCloudPlatform/cortex-data-foundation#42 (2023: ``textPayload``, severity INFO, the label
``ml.googleapis.com/job_state`` ``QUEUED`` on the first line):

* when the job is queued: "Waiting for job to be provisioned.";
* when it is being provisioned (PENDING): "Vertex AI is provisioning job running framework. First
  time usage might take couple of minutes, and subsequent runs can be much faster.", "Vertex AI is
  setting up this job.", "Waiting for training program to start.", "Job is preparing.";
* when its replicas run (RUNNING): "Job is running.";
* when it succeeds: "Tearing down training program.", "Finished tearing down training program.",
  "Job completed successfully.";
* when it fails: an ERROR line with the reason (public runs show e.g. "Replicas low on memory:
  workerpool0. ..."; the emulator writes the job's ``error.message``), then "Finished tearing down
  training program." and "Job failed." (INFO).

While a job waits QUEUED for room under the emulator's host ceiling (capacity/host.py) or for its GPU
quota, or PENDING for free GPUs (capacity/ledger.py), one more INFO line says so, labelled with that state;
a Spot replica's preemption is a WARNING line: the emulator's own words (what Vertex AI writes while
quota or capacity is short, or when it restarts a preempted job, is not documented). When a job is
cancelled the emulator writes "Finished tearing down training program." and "Job was cancelled.": no
public log of a cancelled job was found, so that wording is the emulator's own.
Each line is stamped with the service's time (core/clock.py: a scenario's while one plays), as the job's
own times are; a replica's lines carry the machine's, as they are read. The replica lines some prebuilt
containers add ("Task completed. Exit code (0)...", written by their
launcher inside the replica) are not written. Writing never fails a job: an error is logged.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from vertex_emulator.runtime.log_records import SERVICE_KEY, records_path
from vertex_emulator.runtime.replica_output import RecordLog

if TYPE_CHECKING:
    from vertex_emulator.core.clock import ServiceClock

__all__ = ["ServiceLog", "lines_for"]

log = logging.getLogger(__name__)

_QUEUED = ("Waiting for job to be provisioned.",)
_PENDING = (
    "Vertex AI is provisioning job running framework. First time usage might take couple of minutes, "
    "and subsequent runs can be much faster.",
    "Vertex AI is setting up this job.",
    "Waiting for training program to start.",
    "Job is preparing.",
)
_LINES: dict[str, tuple[str, ...]] = {
    "JOB_STATE_QUEUED": _QUEUED,
    "JOB_STATE_PENDING": _PENDING,
    "JOB_STATE_RUNNING": ("Job is running.",),
    "JOB_STATE_SUCCEEDED": (
        "Tearing down training program.",
        "Finished tearing down training program.",
        "Job completed successfully.",
    ),
    "JOB_STATE_FAILED": ("Finished tearing down training program.", "Job failed."),
    "JOB_STATE_CANCELLED": ("Finished tearing down training program.", "Job was cancelled."),
}


def lines_for(state: str) -> tuple[str, ...]:
    """The INFO lines written when a job enters ``state`` (none for other states)."""
    return _LINES.get(state, ())


class ServiceLog:
    """The ``service`` lines of one job, appended to ``<log dir>/service.jsonl`` (a few lines a job:
    the file is opened for each write)."""

    def __init__(self, log_dir: Path, clock: ServiceClock | None = None) -> None:
        self.path = records_path(log_dir, SERVICE_KEY)
        #: the service's clock: a line is stamped with its time (a scenario's while one plays), as the
        #: job's own times are; None: the machine's
        self.clock = clock

    def state(self, state: str, reason: str | None = None) -> None:
        """Write the lines of ``state``; a FAILED job's ``reason`` comes first, as an ERROR line."""
        if state == "JOB_STATE_FAILED" and reason:
            self._write([reason], sev="ERROR")
        extra = {"labels": {"ml.googleapis.com/job_state": "QUEUED"}} if state == "JOB_STATE_QUEUED" else {}
        self._write(list(lines_for(state)), **extra)

    def waiting(self, reason: str, state: str = "QUEUED") -> None:
        """An INFO line saying why a job waits in ``state`` (QUEUED or PENDING; the emulator's words)."""
        self._write([reason], labels={"ml.googleapis.com/job_state": state})

    def preempted(self, replica: str, preemptions: int, limit: int) -> None:
        """A WARNING line: a Spot replica was preempted, and whether the job restarts (emulator's words)."""
        text = f"The replica {replica} was preempted: Compute Engine reclaimed its Spot VM (STOCKOUT)."
        if preemptions <= limit:
            text += f" Restarting the job (restart {preemptions} of at most {limit})."
        self._write([text], sev="WARNING")

    def _write(self, texts: list[str], **extra: object) -> None:
        if not texts:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            records = RecordLog(str(self.path))
            try:
                at = None if self.clock is None else self.clock.time_ns()
                records.append("service", texts, at=at, fields=extra)
            finally:
                records.close()
        except OSError as exc:
            log.warning("could not write service lines to %s: %s", self.path, exc)
