"""Writes the recorded history the round-trip test replays (tests/data/history/): two pages of a
``customJobs`` List, one ``hyperparameterTuningJobs`` List and a Cloud Logging ``entries.list``
answer, in the shapes Vertex AI's REST reference documents (the v1 JSON mapping: int64 as strings,
RFC 3339 times with microseconds, ``error`` a google.rpc.Status), written here from those shapes, not
from the emulator. ``python emulator/tests/history_fixture.py`` rewrites the files; a test checks they
are what this writes.

The night: 23 CustomJobs over two hours (succeeded, failed with an error, cancelled, a 40-minute queue,
runs from 4 seconds to 1 h 50 min, three jobs of one name and labels), one still RUNNING (not ended:
not reproduced) and a tuning job (listed, not played).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

__all__ = ["DIR", "files"]

DIR = Path(__file__).parent / "data" / "history"
_PROJECT = "projects/123456789012/locations/us-central1"
_T0 = datetime(2026, 11, 24, 1, 0, 0, 250_000, tzinfo=timezone.utc)
_EXIT = (
    "The replica workerpool0-0 exited with a non-zero status of {}. Termination reason: Error. "
    "To find out more about why your job exited please check the logs: "
    "https://console.cloud.google.com/logs/viewer?project=123456789012&resource=ml_job%2Fjob_id%2F{}"
)
# (display name, labels, created +s, queued s, ran s, state, error code or None)
_NIGHT: list[tuple[str, dict[str, str], float, float, float, str, int | None]] = [
    ("nightly-train", {"team": "nlp", "run": "nightly"}, 0, 12.5, 5400, "SUCCEEDED", None),
    ("nightly-eval", {"team": "nlp"}, 30, 3.2, 4.1, "SUCCEEDED", None),
    ("smoke-test", {}, 45, 1.0, 7, "FAILED", 3),
    ("nightly-train", {"team": "nlp", "run": "nightly"}, 60, 2400, 1800, "SUCCEEDED", None),
    ("a100-sweep-lr", {"team": "vision", "sweep": "lr"}, 120, 90, 600, "FAILED", 8),
    ("a100-sweep-lr", {"team": "vision", "sweep": "bs"}, 121, 95, 3600, "SUCCEEDED", None),
    ("embedding-refresh", {"team": "search"}, 300, 20, 900, "CANCELLED", 1),
    ("feature-backfill", {"team": "search", "date": "2026-11-23"}, 600, 5, 61, "SUCCEEDED", None),
    ("feature-backfill", {"team": "search", "date": "2026-11-22"}, 605, 5, 59.75, "SUCCEEDED", None),
    ("feature-backfill", {"team": "search", "date": "2026-11-21"}, 610, 6, 240, "FAILED", 3),
    ("nightly-train", {"team": "nlp", "run": "nightly"}, 900, 30, 120, "FAILED", 13),
    ("distill-small", {"team": "nlp"}, 1200, 45, 6600, "SUCCEEDED", None),
    ("spot-pretrain", {"team": "vision", "tier": "spot"}, 1500, 300, 2700, "CANCELLED", 1),
    ("export-model", {}, 1800, 2, 30, "SUCCEEDED", None),
    ("export-model", {}, 2100, 2, 31, "SUCCEEDED", None),
    ("rerank-train", {"team": "search"}, 2400, 600, 1200, "SUCCEEDED", None),
    ("rerank-eval", {"team": "search"}, 2500, 8, 15, "FAILED", 3),
    ("data-check", {"team": "data"}, 3000, 1, 4, "SUCCEEDED", None),
    ("data-check", {"team": "data"}, 3600, 1, 5, "SUCCEEDED", None),
    ("long-queue", {"team": "vision"}, 3700, 2400, 60, "SUCCEEDED", None),
    ("quantize", {"team": "nlp"}, 4000, 10, 300, "FAILED", 9),
    ("report", {}, 5000, 3, 12, "SUCCEEDED", None),
    ("report", {}, 5100, 3, 12, "CANCELLED", 1),
]


def _time(offset_s: float) -> str:
    return (_T0 + timedelta(seconds=offset_s)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _spec() -> dict[str, Any]:
    return {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-8"},
                "replicaCount": "1",
                "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
                "containerSpec": {"imageUri": "us-docker.pkg.dev/example/train:latest"},
            }
        ]
    }


def _error(code: int, job_id: str, index: int) -> dict[str, Any]:
    messages = {
        3: _EXIT.format(1 + index % 2, job_id),
        8: "The zone 'us-central1-a' does not have enough resources available to fulfill the request. "
        "'(resource type:compute)'.",
        9: "Job failed: the output directory gs://example-bucket/models/quantize is not writable.",
        13: "Internal error occurred for the current attempt.",
        1: "CANCELED",
    }
    return {"code": code, "message": messages[code]}


def _custom_job(
    index: int, row: tuple[str, dict[str, str], float, float, float, str, int | None]
) -> dict[str, Any]:
    name, labels, created, queued, ran, state, code = row
    job_id = str(8_100_000_000_000_000_000 + index * 7919)
    job: dict[str, Any] = {
        "name": f"{_PROJECT}/customJobs/{job_id}",
        "displayName": name,
        "jobSpec": _spec(),
        "state": f"JOB_STATE_{state}",
        "createTime": _time(created),
        "startTime": _time(created + queued),
        "endTime": _time(created + queued + ran),
        "updateTime": _time(created + queued + ran + 0.5),
    }
    if labels:
        job["labels"] = labels
    if code is not None:
        job["error"] = _error(code, job_id, index)
    return job


def _entries(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    entries = []
    for job in jobs[:6]:
        job_id = job["name"].rsplit("/", 1)[-1]
        for n, text in enumerate(("loading data", f"{job['displayName']}: step 100", "done")):
            entries.append(
                {
                    "logName": "projects/123456789012/logs/workerpool0-0",
                    "resource": {
                        "type": "ml_job",
                        "labels": {
                            "job_id": job_id,
                            "project_id": "123456789012",
                            "task_name": "workerpool0-0",
                        },
                    },
                    "textPayload": text,
                    "timestamp": f"{job['startTime'][:-1]}{n}Z",
                    "severity": "INFO",
                    "insertId": f"{job_id}-{n}",
                }
            )
    entries.append(  # a structured entry of the second job, another of a job not in the history
        {
            "resource": {"type": "ml_job", "labels": {"job_id": jobs[1]["name"].rsplit("/", 1)[-1]}},
            "jsonPayload": {"message": "eval accuracy 0.91"},
            "timestamp": "2026-11-24T02:00:00Z",
        }
    )
    entries.append({"resource": {"type": "ml_job", "labels": {"job_id": "1"}}, "textPayload": "x"})
    return {"entries": entries}


def files() -> dict[str, str]:
    """The fixture's files by name, as written."""
    jobs = [_custom_job(i, row) for i, row in enumerate(_NIGHT)]
    running = _custom_job(len(_NIGHT), ("still-running", {}, 6000, 5, 0, "RUNNING", None))
    del running["endTime"]
    tuning = {
        "name": f"{_PROJECT}/hyperparameterTuningJobs/4400000000000000001",
        "displayName": "lr-search",
        "maxTrialCount": 8,
        "parallelTrialCount": 2,
        "state": "JOB_STATE_SUCCEEDED",
        "createTime": _time(200),
        "startTime": _time(230),
        "endTime": _time(4200),
    }
    pages = {
        "custom-jobs-page1.json": {"customJobs": jobs[12:], "nextPageToken": "Ci0KDmN1c3RvbUpvYnMvMg"},
        "custom-jobs-page2.json": {"customJobs": [running, *jobs[:12]]},
        "tuning-jobs.json": {"hyperparameterTuningJobs": [tuning]},
        "entries.json": _entries(jobs),
    }
    return {name: json.dumps(body, indent=2) + "\n" for name, body in pages.items()}


if __name__ == "__main__":
    DIR.mkdir(parents=True, exist_ok=True)
    for file_name, text in files().items():
        (DIR / file_name).write_text(text, encoding="utf-8")
