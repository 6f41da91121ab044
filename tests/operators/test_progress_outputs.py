"""The progress log (only what changed) and the JSON outputs, from v1 job dicts."""

from __future__ import annotations

import json
from typing import Any

from airflow_vertex_dist.jobs.outputs import job_output, tuning_output
from airflow_vertex_dist.jobs.progress import ProgressLog

NAME = "projects/p/locations/l/customJobs/9"
TUNING = "projects/p/locations/l/hyperparameterTuningJobs/5"


def custom(state: str, up: list[str] | None = None) -> dict[str, Any]:
    job: dict[str, Any] = {
        "name": NAME,
        "state": state,
        "jobSpec": {
            "enableWebAccess": True,
            "workerPoolSpecs": [{"replicaCount": "1"}, {"replicaCount": "2"}],
        },
    }
    if up is not None:
        job["webAccessUris"] = {k: "http://x" for k in up}
    return job


def study(state: str, trials: list[tuple[str, str, float | None]]) -> dict[str, Any]:
    rows = []
    for tid, tstate, value in trials:
        row: dict[str, Any] = {
            "id": tid,
            "state": tstate,
            "parameters": [{"parameterId": "lr", "value": 0.1}],
        }
        if value is not None:
            row["finalMeasurement"] = {"metrics": [{"metricId": "acc", "value": value}]}
        rows.append(row)
    return {
        "name": TUNING,
        "state": state,
        "maxTrialCount": 3,
        "studySpec": {"metrics": [{"metricId": "acc", "goal": "MAXIMIZE"}]},
        "trials": rows,
    }


def test_progress_logs_state_changes_and_replicas_once() -> None:
    log = ProgressLog()
    assert log.update(custom("JOB_STATE_QUEUED")) == [f"job {NAME}: submitted -> QUEUED", "replicas up 0/3"]
    assert log.update(custom("JOB_STATE_QUEUED")) == []
    assert log.update(custom("JOB_STATE_RUNNING", ["workerpool0-0", "workerpool1-1"])) == [
        f"job {NAME}: QUEUED -> RUNNING",
        "replicas up 2/3: workerpool0-0, workerpool1-1",
    ]
    assert log.update(custom("JOB_STATE_RUNNING", ["workerpool0-0", "workerpool1-1"])) == []


def test_progress_logs_trials_and_the_best_so_far() -> None:
    log = ProgressLog()
    log.update(study("JOB_STATE_RUNNING", [("1", "ACTIVE", None)]))
    assert log.update(study("JOB_STATE_RUNNING", [("1", "SUCCEEDED", 0.7), ("2", "ACTIVE", None)])) == [
        "trials done 1/3 (succeeded 1, infeasible 0, active 1); best acc=0.7 (trial 1)"
    ]
    assert log.update(
        study(
            "JOB_STATE_SUCCEEDED",
            [("1", "SUCCEEDED", 0.7), ("2", "SUCCEEDED", 0.9), ("3", "INFEASIBLE", None)],
        )
    ) == [
        f"job {TUNING}: RUNNING -> SUCCEEDED",
        "trials done 3/3 (succeeded 2, infeasible 1, active 0); best acc=0.9 (trial 2)",
    ]


def test_outputs_are_json() -> None:
    failed = {
        **custom("JOB_STATE_FAILED"),
        "error": {"code": 3, "message": "boom"},
        "createTime": "2024-01-01T00:00:00Z",
    }
    out = job_output(failed, "http://console")
    assert json.loads(json.dumps(out)) == out
    assert out["error"] == {"code": 3, "message": "boom"} and out["id"] == "9" and out["kind"] == "customJobs"
    tuned = tuning_output(
        study("JOB_STATE_SUCCEEDED", [("1", "SUCCEEDED", 0.7), ("2", "INFEASIBLE", None)]), "u"
    )
    assert json.loads(json.dumps(tuned)) == tuned
    assert tuned["best_trial"] == {
        "id": "1",
        "parameters": {"lr": 0.1},
        "metric_id": "acc",
        "metric_value": 0.7,
        "goal": "MAXIMIZE",
    }
    assert [t["state"] for t in tuned["trials"]] == ["SUCCEEDED", "INFEASIBLE"]
