"""Tuning jobs with real trial processes reporting through the real cloudml-hypertune library."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runner_support import PARENT, TRAINERS, finished, in_groups, wait_for

from vertex_emulator.core.config import EmulatorConfig
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.runtime.runner import Runner
from vertex_emulator.runtime.tuning_study import failed_trial_limit
from vertex_emulator.tuning.hypertune import final_measurement

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[JobStore, EmulatorConfig, Runner]]:
    store = JobStore(tmp_path / "state" / "jobs.sqlite3")
    config = EmulatorConfig(state_dir=tmp_path / "state", gcs_root=tmp_path / "gcs", stop_grace_s=1.0)
    runner = Runner(store, config)
    yield store, config, runner
    runner.close()
    store.close()


def _trial_spec(rec: Path, *extra: str) -> dict[str, Any]:
    def pool(script: str, *args: str) -> dict[str, Any]:
        return {
            "machineSpec": {"machineType": "n1-standard-4"},
            "replicaCount": "1",
            "containerSpec": {
                "imageUri": "local/trainer:1",
                "command": [sys.executable, str(TRAINERS / script)],
                "args": list(args),
                "env": [{"name": "RECORD_DIR", "value": str(rec)}],
            },
        }

    # each trial is a full cluster: a primary that reports the metric and a worker
    return {
        "workerPoolSpecs": [pool("tune_trainer.py", *extra), pool("behave.py", "--say", "worker up")],
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/study"},
    }


def _tuning_job(
    rec: Path,
    *,
    algorithm: str,
    max_trials: int,
    parallel: int,
    max_failed: int = 0,
    selection: str = "LAST_MEASUREMENT",
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    return {
        "displayName": "study",
        "studySpec": {
            "metrics": [{"metricId": "score", "goal": "MAXIMIZE"}],
            "parameters": [{"parameterId": "x", "integerValueSpec": {"minValue": "1", "maxValue": "5"}}],
            "algorithm": algorithm,
            "measurementSelectionType": selection,
        },
        "maxTrialCount": max_trials,
        "parallelTrialCount": parallel,
        "maxFailedTrialCount": max_failed,
        "trialJobSpec": _trial_spec(rec, *extra),
    }


def _max_overlap(runs: list[dict[str, Any]]) -> int:
    edges = sorted([(r["start"], 1) for r in runs] + [(r["end"], -1) for r in runs])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def test_grid_study_runs_trials_in_parallel_and_picks_the_best(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    rec = tmp_path / "rec"
    rec.mkdir()
    job = store.insert(
        "hyperparameterTuningJobs",
        PARENT,
        _tuning_job(rec, algorithm="GRID_SEARCH", max_trials=5, parallel=2, extra=("--work", "0.8")),
    )
    name = job["name"]
    runner.submit(name)
    # trials[] is updated live: a running trial is ACTIVE and names a CustomJob that exists
    active = wait_for(
        lambda: [t for t in store.get(name).get("trials") or [] if t["state"] == "ACTIVE"],
        what="an ACTIVE trial",
    )
    assert store.get(active[0]["customJob"])["jobSpec"]
    done = finished(store, name, timeout=60)
    assert done["state"] == "JOB_STATE_SUCCEEDED", done.get("error")
    trials = done["trials"]
    assert [t["id"] for t in trials] == ["1", "2", "3", "4", "5"]
    assert [t["parameters"] for t in trials] == [[{"parameterId": "x", "value": x}] for x in range(1, 6)]

    runs = [json.loads((rec / f"trial-{i}.json").read_text()) for i in range(1, 6)]
    assert _max_overlap(runs) == 2  # parallelTrialCount respected, and used
    for i, r in enumerate(runs, start=1):
        assert r["trial"] == str(i) and r["x"] == i
        assert r["cluster_spec"]["task"] == {"type": "workerpool0", "index": 0, "trial": str(i)}
        assert r["model_dir"] == f"gs://bkt/study/{i}/model/"
        assert r["argv"] == ["--work", "0.8", f"--x={i}"]  # the parameter comes after the args

    by_x = {t["parameters"][0]["value"]: t for t in trials}
    assert by_x[2]["state"] == "INFEASIBLE" and "no final measurement" in by_x[2]["infeasibleReason"]
    assert "finalMeasurement" not in by_x[2]
    for x in (1, 3, 4, 5):
        t = by_x[x]
        assert t["state"] == "SUCCEEDED"
        # LAST_MEASUREMENT: the value at step 2, not the earlier -1.0; timed from the trial's start
        final = dict(t["finalMeasurement"])
        assert float(final.pop("elapsedDuration").removesuffix("s")) > 0.8  # after the 0.8 s of --work
        assert final == {
            "stepCount": "2",
            "metrics": [{"metricId": "score", "value": -float((x - 3) ** 2)}],
        }
        assert [m["stepCount"] for m in t["measurements"]] == ["1", "2"]
        assert t["startTime"] <= t["endTime"]
        backing = store.get(t["customJob"])
        assert backing["state"] == "JOB_STATE_SUCCEEDED"
        assert backing["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] == [
            "--work",
            "0.8",
            f"--x={x}",
        ]
        assert backing["jobSpec"]["baseOutputDirectory"] == {"outputUriPrefix": f"gs://bkt/study/{t['id']}"}
    best = max(
        (t for t in trials if t["state"] == "SUCCEEDED"),
        key=lambda t: t["finalMeasurement"]["metrics"][0]["value"],
    )
    assert best["parameters"][0]["value"] == 3


def test_max_failed_trial_count_fails_the_study(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    rec = tmp_path / "rec"
    rec.mkdir()
    body = _tuning_job(
        rec,
        algorithm="RANDOM_SEARCH",
        max_trials=6,
        parallel=1,
        max_failed=2,
        extra=("--fail", "--work", "0"),
    )
    name = store.insert("hyperparameterTuningJobs", PARENT, body)["name"]
    runner.submit(name)
    done = finished(store, name, timeout=60)
    assert done["state"] == "JOB_STATE_FAILED"
    assert done["error"]["code"] == 3
    assert (
        "2 trials failed" in done["error"]["message"] and "maxFailedTrialCount 2" in done["error"]["message"]
    )
    assert len(done["trials"]) == 2  # stopped at the limit, not after maxTrialCount
    for t in done["trials"]:
        assert t["state"] == "INFEASIBLE"
        assert "ended FAILED" in t["infeasibleReason"] and "diverged" in t["infeasibleReason"]


def test_cancel_study_cancels_running_trials(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    rec = tmp_path / "rec"
    rec.mkdir()
    body = _tuning_job(rec, algorithm="RANDOM_SEARCH", max_trials=4, parallel=2, extra=("--work", "60"))
    body["labels"] = {"emulator-seed": "5"}
    body["trialJobSpec"]["enableWebAccess"] = True
    name = store.insert("hyperparameterTuningJobs", PARENT, body)["name"]
    runner.submit(name)

    def two_running() -> list[str]:
        trials = store.get(name).get("trials") or []
        jobs = [t["customJob"] for t in trials]
        return (
            jobs if len(jobs) == 2 and all(store.get(j)["state"] == "JOB_STATE_RUNNING" for j in jobs) else []
        )

    customs = wait_for(two_running, what="two running trials")
    uris = wait_for(
        lambda: [t.get("webAccessUris") for t in store.get(name)["trials"] if t.get("webAccessUris")],
        what="trial web access URIs",
    )
    assert sorted(uris[0]) == ["workerpool0-0", "workerpool1-0"]
    assert any(u["workerpool0-0"].endswith(f"/web/{cj}/workerpool0-0") for u in uris for cj in customs)
    groups = set()
    for cj in customs:
        for key in ("workerpool0-0",):
            view = runner.replica_view(cj, key)
            assert view is not None and view["state"] == "RUNNING"
            groups.add(view["pid"])
    runner.cancel(name)
    done = finished(store, name)
    assert done["state"] == "JOB_STATE_CANCELLED" and done["error"]["code"] == 1
    assert all(t["state"] == "INFEASIBLE" and "cancelled" in t["infeasibleReason"] for t in done["trials"])
    assert all(store.get(cj)["state"] == "JOB_STATE_CANCELLED" for cj in customs)
    assert in_groups(groups) == []


def test_final_measurement_best_and_last_and_failure_rule() -> None:
    lines = [
        {"score": "0.5", "loss": "3", "global_step": "1"},
        {"score": "0.9", "global_step": "2"},
        {"score": "0.7", "loss": "1", "global_step": "3"},
    ]
    metrics = [{"metricId": "score", "goal": "MAXIMIZE"}, {"metricId": "loss", "goal": "MINIMIZE"}]
    assert final_measurement(lines, metrics) == {
        "stepCount": "3",
        "metrics": [{"metricId": "score", "value": 0.7}, {"metricId": "loss", "value": 1.0}],
    }
    assert final_measurement(lines, metrics, "BEST_MEASUREMENT") == {
        "stepCount": "2",
        "metrics": [{"metricId": "score", "value": 0.9}, {"metricId": "loss", "value": 1.0}],
    }
    assert final_measurement([{"other": "1"}], metrics) is None
    assert failed_trial_limit(2, 10) == 2
    assert failed_trial_limit(0, 2) == 2
    assert failed_trial_limit(0, 10) == 3
    assert failed_trial_limit(0, 50) == 10


def test_a_trial_whose_python_lacks_hypertune_says_so(env: Any, tmp_path: Path) -> None:
    """The check at trial start: the primary's Python (a venv without cloudml-hypertune) cannot report."""
    import venv

    store, config, runner = env
    bare = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(bare)
    rec = tmp_path / "rec"
    rec.mkdir()
    body = _tuning_job(rec, algorithm="RANDOM_SEARCH", max_trials=1, parallel=1)
    body["trialJobSpec"]["workerPoolSpecs"][0]["containerSpec"]["command"][0] = str(bare / "bin" / "python")
    name = store.insert("hyperparameterTuningJobs", PARENT, body)["name"]
    runner.submit(name)
    done = finished(store, name, timeout=60)
    (trial,) = done["trials"]
    assert trial["state"] == "INFEASIBLE"
    assert "cannot import hypertune: install cloudml-hypertune" in trial["infeasibleReason"]
    assert not list(rec.iterdir())  # the trainer never ran
