"""The pure wait conditions shared by the sensors, their triggers and the operators' outputs."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_vertex_dist.common.replicas import check_replica_names
from airflow_vertex_dist.jobs.dicts import compact_job
from airflow_vertex_dist.jobs.events import read_event
from airflow_vertex_dist.jobs.replicas import (
    expected_replicas,
    replica_condition,
    resolve_replicas,
)
from airflow_vertex_dist.jobs.states import job_condition, job_event, normalize_state
from airflow_vertex_dist.jobs.trials import (
    best_trial,
    check_trial_condition,
    trial_condition,
    trial_summary,
)

NAME = "projects/p/locations/us-central1/customJobs/1"


def custom_job(
    state: str = "JOB_STATE_RUNNING", *, web: bool = True, up: list[str] | None = None
) -> dict[str, Any]:
    job: dict[str, Any] = {
        "name": NAME,
        "state": state,
        "jobSpec": {
            "enableWebAccess": web,
            "workerPoolSpecs": [
                {"replicaCount": "1"},
                {"replicaCount": "2"},
                {},
                {"replicaCount": "1"},
            ],
        },
    }
    if up is not None:
        job["webAccessUris"] = {key: f"http://127.0.0.1/{key}" for key in up}
    return job


def trial(tid: str, state: str, value: float | None = None, lr: float = 0.1) -> dict[str, Any]:
    out: dict[str, Any] = {"id": tid, "state": state, "parameters": [{"parameterId": "lr", "value": lr}]}
    if value is not None:
        out["finalMeasurement"] = {"stepCount": "10", "metrics": [{"metricId": "loss", "value": value}]}
    return out


def tuning_job(goal: str, trials: list[dict[str, Any]], state: str = "JOB_STATE_RUNNING") -> dict[str, Any]:
    return {
        "name": "projects/p/locations/l/hyperparameterTuningJobs/7",
        "state": state,
        "maxTrialCount": 4,
        "studySpec": {"metrics": [{"metricId": "loss", "goal": goal}]},
        "trials": trials,
    }


def test_normalize_state_accepts_short_and_full_names_and_rejects_others() -> None:
    assert normalize_state("succeeded") == "JOB_STATE_SUCCEEDED"
    assert normalize_state("JOB_STATE_RUNNING") == "JOB_STATE_RUNNING"
    with pytest.raises(ValueError, match=r"target_states: 'DONE' is not a job state"):
        normalize_state("DONE")


def test_job_condition_target_failure_and_pending() -> None:
    assert job_condition(custom_job("JOB_STATE_RUNNING"), ["RUNNING"]) == job_condition(
        custom_job("JOB_STATE_RUNNING"), ["JOB_STATE_RUNNING"]
    )
    assert job_condition(custom_job("JOB_STATE_QUEUED"), ["SUCCEEDED"]) is None
    failed = custom_job("JOB_STATE_FAILED")
    failed["error"] = {"code": 3, "message": "replica workerpool0-0 exited with code 2"}
    verdict = job_condition(failed, ["SUCCEEDED"])
    assert verdict is not None and verdict.status == "error"
    assert "FAILED: replica workerpool0-0 exited with code 2" in verdict.message
    # every terminal non-target state fails fast, including EXPIRED and PARTIALLY_SUCCEEDED
    for state in ("JOB_STATE_EXPIRED", "JOB_STATE_PARTIALLY_SUCCEEDED", "JOB_STATE_CANCELLED"):
        verdict = job_condition(custom_job(state), ["SUCCEEDED"])
        assert verdict is not None and not verdict.ok
    # an explicit failure set narrows fail-fast
    assert job_condition(custom_job("JOB_STATE_PAUSED"), ["SUCCEEDED"], ["PAUSED"]) is not None


def test_expected_replicas_keep_pool_positions() -> None:
    assert expected_replicas(custom_job()) == [
        "workerpool0-0",
        "workerpool1-0",
        "workerpool1-1",
        "workerpool3-0",
    ]


def test_replica_names_are_checked_and_patterns_resolved() -> None:
    with pytest.raises(ValueError, match=r"replicas\[1\]: 'worker-1' is not a replica name"):
        check_replica_names(["workerpool0-0", "worker-1"])
    assert resolve_replicas(custom_job(), ["workerpool1-*", "workerpool0-0"]) == [
        "workerpool1-0",
        "workerpool1-1",
        "workerpool0-0",
    ]
    with pytest.raises(ValueError, match=r"replicas\[0\]: 'workerpool2-\*' matches no replica"):
        resolve_replicas(custom_job(), ["workerpool2-*"])


def test_replica_condition() -> None:
    assert replica_condition(custom_job(up=["workerpool0-0", "workerpool1-0"]), ["workerpool1-*"]) is None
    done = replica_condition(custom_job(up=["workerpool1-0", "workerpool1-1"]), ["workerpool1-*"])
    assert done is not None and done.ok and "2/2" in done.message
    no_web = replica_condition(custom_job(web=False), ["workerpool0-0"])
    assert no_web is not None and not no_web.ok and "enableWebAccess" in no_web.message
    tuning = {**custom_job(), "name": "projects/p/locations/l/hyperparameterTuningJobs/7"}
    refused = replica_condition(tuning, ["workerpool0-0"])
    assert refused is not None and not refused.ok and "is a tuning job" in refused.message
    ended = replica_condition(custom_job("JOB_STATE_SUCCEEDED", up=["workerpool0-0"]), ["workerpool1-1"])
    assert ended is not None and not ended.ok and "before replicas workerpool1-1" in ended.message


@pytest.mark.parametrize(
    ("goal", "best_id", "best_value"),
    [("MAXIMIZE", "3", 0.9), ("MINIMIZE", "1", 0.2)],
)
def test_best_trial_honours_the_study_goal(goal: str, best_id: str, best_value: float) -> None:
    job = tuning_job(
        goal,
        [
            trial("1", "SUCCEEDED", 0.2, lr=0.01),
            trial("2", "INFEASIBLE"),
            trial("3", "SUCCEEDED", 0.9, lr=0.3),
            trial("4", "ACTIVE"),
        ],
    )
    best = best_trial(job)
    assert best is not None
    assert (best["id"], best["metric_value"], best["goal"]) == (best_id, best_value, goal)
    summary = trial_summary(job)
    assert (summary["total"], summary["done"], summary["succeeded"], summary["active"]) == (4, 3, 2, 1)
    assert summary["trials"][2] == {
        "id": "3",
        "state": "SUCCEEDED",
        "parameters": {"lr": 0.3},
        "metric_value": 0.9,
    }


def test_trial_condition() -> None:
    with pytest.raises(ValueError, match="min_succeeded, metric_threshold: set at least one"):
        check_trial_condition(None, None)
    job = tuning_job("MINIMIZE", [trial("1", "SUCCEEDED", 0.5), trial("2", "ACTIVE")])
    assert trial_condition(job, min_succeeded=2) is None
    assert trial_condition(job, metric_threshold=0.4) is None
    crossed = trial_condition(job, metric_threshold=0.5)
    assert crossed is not None and crossed.ok and "<= 0.5" in crossed.message
    maximize = tuning_job("MAXIMIZE", job["trials"])
    assert trial_condition(maximize, metric_threshold=0.6) is None
    ended = trial_condition({**job, "state": "JOB_STATE_SUCCEEDED"}, min_succeeded=2)
    assert ended is not None and not ended.ok and "1 succeeded trials" in ended.message


# ------------------------------------------------------------------------------------- trigger events


def test_read_event_checks_the_payload_a_resumed_task_gets() -> None:
    job = {"name": NAME, "state": "JOB_STATE_SUCCEEDED"}
    verdict, got = read_event({"status": "success", "message": "done", "job": job})
    assert verdict.ok and verdict.message == "done" and got == job
    verdict, got = read_event({"status": "error", "message": "job x failed: boom", "job": None})
    assert not verdict.ok and verdict.message == "job x failed: boom" and got is None
    for bad in (None, "success", {"status": "done"}, {"message": "no status"}):
        with pytest.raises(
            ValueError, match=r"^event: expected \{'status': 'success'\|'error'\|'reattach', \.\.\.\}"
        ):
            read_event(bad)
    for job_field in (None, {}, {"state": "JOB_STATE_SUCCEEDED"}):
        with pytest.raises(ValueError, match="^event: a success event carries the job"):
            read_event({"status": "success", "message": "", "job": job_field})


def test_read_event_takes_exactly_the_keys_of_a_job_event() -> None:
    job = {"name": NAME, "state": "JOB_STATE_SUCCEEDED"}
    missing = r"^event: expected the keys \['job', 'message', 'status'\]: missing \['message'\]"
    with pytest.raises(ValueError, match=missing):
        read_event({"status": "success", "job": job})
    with pytest.raises(ValueError, match=r"unknown \['extra'\]"):
        read_event({"status": "success", "message": "done", "job": job, "extra": 1})
    with pytest.raises(ValueError, match="^event: 'message' is a string and 'job' a dict or None"):
        read_event({"status": "error", "message": None, "job": None})
    with pytest.raises(ValueError, match="^event: 'message' is a string and 'job' a dict or None"):
        read_event({"status": "error", "message": "x", "job": "a job"})


@pytest.mark.parametrize(
    "state",
    [
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
        "JOB_STATE_PAUSED",
    ],
)
def test_every_job_event_is_what_a_resumed_task_reads(state: str) -> None:
    job = {"name": NAME, "state": state, "jobSpec": {"workerPoolSpecs": [{}]}, "error": {"message": "x"}}
    event = job_event(job, paused_for_s=10.0, paused_grace=5.0)
    assert event is not None
    verdict, got = read_event(event)
    assert verdict.ok == (state == "JOB_STATE_SUCCEEDED")
    assert got == compact_job(job) and "jobSpec" not in got
