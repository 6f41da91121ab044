"""Whose job a task waits on, and who cancels it, on the real stack.

* A job another deployment left with this run's labels but another spec is not adopted: the task
  starts its own job, and the foreign one runs on untouched.
* Nor is a job planted with every label of the task's job, the ``airflow-spec`` fingerprint of the
  spec the task submits included, that runs other code: the task compares the job's spec with its own,
  says in its log why it does not adopt it, and starts its own job; the planted one runs on untouched.
* A backfill's deferred first try submits with its Create alone; when a live job of the task that
  runs its spec was there before (as a concurrent try's would be), its trigger finds it, the task
  cancels its own job and waits on that one, and the run succeeds with that job as its output.
* A run past its ``dagrun_timeout`` is ended by the scheduler; the package's listener cancels the job
  its deferred task waited on, and no replica process is left.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from airflow_vertex_dist.hooks.labels import run_labels
from tests.polling import poll_until

from .figures import Figures
from .stack import AirflowStack
from .test_crashes import SLEEP, job_replicas_gone, run_jobs, wait_job

JOBS_URL = "/v1/projects/stack-project/locations/us-central1/customJobs"

pytestmark = [pytest.mark.stack, pytest.mark.timeout(600)]


def test_a_foreign_labelled_job_is_not_adopted(stack: AirflowStack) -> None:
    run_id = "manual__foreign_job"
    foreign_body: dict[str, Any] = {
        "displayName": "another-deployment",
        "labels": run_labels("stack_deferred", "train", run_id, -1),
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": "1",
                    "containerSpec": {
                        "imageUri": "python:3.11",
                        "command": [sys.executable, "-c", SLEEP.format(s=600)],
                    },
                }
            ]
        },
    }
    url = f"{stack.rest_endpoint}{JOBS_URL}"
    resp = stack._http.post(url, json=foreign_body)
    resp.raise_for_status()
    foreign = resp.json()
    stack.trigger("stack_deferred", {"code": "print('trained')"}, run_id=run_id)
    state = stack.wait_run("stack_deferred", run_id, timeout=300)
    jobs = {j["name"]: j for j in run_jobs(stack, "stack_deferred", run_id)}
    ours = [j for name, j in jobs.items() if name != foreign["name"]]
    Figures.record(
        "crashes",
        "foreign_labelled_job",
        {"outcome": state, "jobs_of_the_task": len(ours), "foreign_state": jobs[foreign["name"]]["state"]},
    )
    try:
        assert state == "success"
        assert len(ours) == 1 and ours[0]["state"] == "JOB_STATE_SUCCEEDED"
        assert jobs[foreign["name"]]["state"] in ("JOB_STATE_PENDING", "JOB_STATE_RUNNING")
    finally:
        stack._http.post(f"{stack.rest_endpoint}/v1/{foreign['name']}:cancel", json={})


@pytest.mark.timeout(900)  # two runs of the DAG
def test_a_planted_job_with_the_tasks_fingerprint_is_not_adopted(stack: AirflowStack) -> None:
    """Every label of a task's job can be computed offline, the fingerprint included. Here they are
    read from a run of the same DAG with the same params under another run id (same params, same
    rendered spec, same ``airflow-spec``): the planted job is that run's job as the service returned
    it, under this run's ``airflow-run``, with another command for the primary."""
    code = "print('trained')"
    probe_id = "manual__planted_job_probe"
    stack.trigger("stack_deferred", {"code": code}, run_id=probe_id)
    assert stack.wait_run("stack_deferred", probe_id, timeout=300) == "success"
    (probe,) = run_jobs(stack, "stack_deferred", probe_id)

    run_id = "manual__planted_job"
    job_spec = copy.deepcopy(probe["jobSpec"])
    job_spec["workerPoolSpecs"][0]["containerSpec"]["command"] = [sys.executable, "-c", SLEEP.format(s=600)]
    planted_body = {
        "displayName": probe["displayName"],
        # managed-by, airflow-dag, airflow-task, airflow-spec, airflow-budget as on the task's job
        "labels": {**probe["labels"], **run_labels("stack_deferred", "train", run_id, -1)},
        "jobSpec": job_spec,
    }
    resp = stack._http.post(f"{stack.rest_endpoint}{JOBS_URL}", json=planted_body)
    resp.raise_for_status()
    planted = resp.json()

    def planted_job() -> dict[str, Any]:
        got = stack._http.get(f"{stack.rest_endpoint}/v1/{planted['name']}")
        got.raise_for_status()
        return dict(got.json())

    try:
        poll_until(
            lambda: planted_job()["state"] == "JOB_STATE_RUNNING", timeout=120, what="the planted job running"
        )
        stack.trigger("stack_deferred", {"code": code}, run_id=run_id)
        state = stack.wait_run("stack_deferred", run_id, timeout=300)
        jobs = {j["name"]: j for j in run_jobs(stack, "stack_deferred", run_id)}
        ours = [j for name, j in jobs.items() if name != planted["name"]]
        tries = int(stack.task_instance("stack_deferred", run_id, "train")["try_number"])
        log = "\n".join(stack.task_log("stack_deferred", run_id, "train", t) for t in range(1, tries + 1))
        said = f"Not adopting {planted['name']} (RUNNING)" in log and "containerSpec.command" in log
        after = planted_job()
        Figures.record(
            "crashes",
            "planted_job",
            {
                "outcome": state,
                "jobs_of_the_task": len(ours),
                "same_fingerprint": all(
                    j["labels"].get("airflow-spec") == planted["labels"]["airflow-spec"] for j in ours
                ),
                "planted_state": after["state"],
                "logged_not_adopting": said,
            },
        )
        assert state == "success"
        assert len(ours) == 1 and ours[0]["state"] == "JOB_STATE_SUCCEEDED"
        assert ours[0]["labels"]["airflow-spec"] == planted["labels"]["airflow-spec"]
        assert ours[0]["labels"]["airflow-budget"] == planted["labels"]["airflow-budget"]
        assert after["state"] == "JOB_STATE_RUNNING"
        assert said, log[-4000:]
    finally:
        stack._http.post(f"{stack.rest_endpoint}/v1/{planted['name']}:cancel", json={})


def test_dagrun_timeout_cancels_the_job(stack: AirflowStack) -> None:
    run_id = stack.trigger("stack_timeout", {"code": SLEEP.format(s=600)})
    job = wait_job(stack, "stack_timeout", run_id, {"JOB_STATE_RUNNING"})
    stack.wait_task_state("stack_timeout", run_id, "train", {"deferred"})
    state = stack.wait_run("stack_timeout", run_id, timeout=180)
    done = wait_job(stack, "stack_timeout", run_id, {"JOB_STATE_CANCELLED"}, timeout=120)
    poll_until(lambda: job_replicas_gone(stack, job), timeout=60, what="replicas of the cancelled job gone")
    Figures.record(
        "crashes", "dagrun_timeout", {"outcome": state, "job_state": done["state"], "replicas_left": 0}
    )
    assert state == "failed"
    assert done["name"] == job["name"]
    assert len(run_jobs(stack, "stack_timeout", run_id)) == 1


@pytest.mark.timeout(900)  # a probe run, then the backfill
def test_a_backfills_deferred_first_try_converges_in_its_trigger(stack: AirflowStack, tmp_path: Path) -> None:
    """The task's labels and spec are read from a manual probe run of the same DAG and params; the
    older job is that spec under the backfill run's labels, made before the backfill starts. The
    first try's look-up before its Create is skipped (a backfill's try 1), so only its trigger can
    find the older job.

    Every job of the three runs the same code (the fingerprint is the spec's), which trains once a
    flag file exists: the probe's job finds it there; the older and the backfill's own jobs wait until
    the task has cancelled its own, so how fast the trigger converges (seconds, or a minute on a
    loaded machine) cannot let the own job end first."""
    dag_id = "stack_converge"
    flag = tmp_path / "train"
    code = (
        f"import pathlib, time\nwhile not pathlib.Path({str(flag)!r}).exists(): time.sleep(0.2)\n"
        "print('trained')"
    )
    probe_id = "manual__converge_probe"
    run_id = "backfill__2024-01-01T00:00:00+00:00"
    stack.api("PATCH", f"/api/v2/dags/{dag_id}", json_body={"is_paused": False})  # paused: no run starts
    try:
        flag.touch()
        stack.trigger(dag_id, {"code": code}, run_id=probe_id)
        assert stack.wait_run(dag_id, probe_id, timeout=300) == "success"
        flag.unlink()
        (probe,) = run_jobs(stack, dag_id, probe_id)
        older_body = {
            "displayName": probe["displayName"],
            "labels": {**probe["labels"], **run_labels(dag_id, "train", run_id, -1)},
            "jobSpec": probe["jobSpec"],
        }
        resp = stack._http.post(f"{stack.rest_endpoint}{JOBS_URL}", json=older_body)
        resp.raise_for_status()
        older = resp.json()
        stack.backfill(dag_id, "2024-01-01", "2024-01-01", code=code)
        poll_until(
            lambda: any(
                j["name"] != older["name"] and j["state"] == "JOB_STATE_CANCELLED"
                for j in run_jobs(stack, dag_id, run_id)
            ),
            timeout=300,
            interval=1.0,
            what="the task cancelled its own job for the older one",
        )
        flag.touch()
        state = stack.wait_run(dag_id, run_id, timeout=300)
    finally:
        flag.touch()  # whatever happened, no replica waits on
        stack.api("PATCH", f"/api/v2/dags/{dag_id}", json_body={"is_paused": True})
    jobs = {j["name"]: j for j in run_jobs(stack, dag_id, run_id)}
    own = [j for name, j in jobs.items() if name != older["name"]]
    ti = stack.task_instance(dag_id, run_id, "train")
    log = stack.task_log(dag_id, run_id, "train", int(ti["try_number"]))
    run = quote(run_id, safe="")
    output = stack.api(
        "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run}/taskInstances/train/xcomEntries/return_value"
    )["value"]
    Figures.record(
        "crashes",
        "converged_in_the_trigger",
        {
            "outcome": state,
            "tries": int(ti["try_number"]),
            "jobs_of_the_task": len(jobs),
            "older_state": jobs[older["name"]]["state"],
            "own_states": sorted(j["state"] for j in own),
        },
    )
    assert state == "success"
    assert int(ti["try_number"]) == 1  # the first try, never retried
    assert jobs[older["name"]]["state"] == "JOB_STATE_SUCCEEDED"
    assert len(own) == 1 and own[0]["state"] == "JOB_STATE_CANCELLED"
    assert f"an older job of this task, {older['name']}, runs the same spec" in log, log[-4000:]
    value = output if isinstance(output, dict) else json.loads(output)
    assert value["name"] == older["name"] and value["state"] == "JOB_STATE_SUCCEEDED"
