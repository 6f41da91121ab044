"""Every cloudml-hypertune report counts, although the library keeps only its last 100 in the file:
the emulator reads the file while the trial runs, publishes the running trial's measurements, and
picks a BEST final measurement among all of them (it read the file when the trial ended, and with
150 reports BEST could only pick among steps 51 to 150)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from polling import poll_until

from vertex_emulator.testing import PARENT, wait_for_state
from vertex_emulator.tuning.hypertune import MetricsLog, final_measurement

#: The library's own limit (hypertune.py: ``_MAX_NUM_METRIC_ENTRIES_TO_PRESERVE``).
KEPT_BY_THE_LIBRARY = 100


def score(step: int) -> float:
    """The metric at ``step``: best (0.99) at step 3, then declining (an over-trained model)."""
    return 0.99 if step == 3 else 0.9 - step / 1000


def test_the_library_keeps_only_its_last_100_reports_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the fix is for, with the real library: the file alone loses the early reports; a
    MetricsLog that read it along the way has them all, in order, once each."""
    import hypertune

    path = tmp_path / "hypertune" / "output.metrics"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(path))
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "1")
    reporter = hypertune.HyperTune()
    log = MetricsLog(path)
    assert not log.poll()  # no file yet
    for step in range(1, 151):
        reporter.report_hyperparameter_tuning_metric("score", score(step), global_step=step)
        if step % 60 == 0:
            assert log.poll()
    assert log.poll()
    assert not log.poll() and log.version == 3  # nothing new: nothing kept twice
    in_file = [json.loads(line) for line in path.read_text().splitlines()]
    assert [int(r["global_step"]) for r in in_file] == list(range(51, 151))
    assert [int(r["global_step"]) for r in log.reports()] == list(range(1, 151))
    metrics = [{"metricId": "score", "goal": "MAXIMIZE"}]
    assert final_measurement(in_file, metrics, "BEST_MEASUREMENT") == {
        "stepCount": "51",
        "metrics": [{"metricId": "score", "value": score(51)}],
    }  # the old reading
    best = final_measurement(log.reports(), metrics, "BEST_MEASUREMENT")
    assert best == {"stepCount": "3", "metrics": [{"metricId": "score", "value": 0.99}]}


def test_a_line_cut_by_a_rewrite_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "m"
    full = json.dumps({"timestamp": 2.0, "score": "1", "global_step": "2"}, sort_keys=True)
    path.write_text(json.dumps({"timestamp": 1.0, "score": "0", "global_step": "1"}) + "\n" + full[:20])
    log = MetricsLog(path)
    assert log.poll() and len(log.reports()) == 1
    path.write_text(full + "\n")
    assert log.poll()
    assert [r["global_step"] for r in log.reports()] == ["1", "2"]


TRAINER = """
import os, pathlib, sys, time, hypertune
reporter = hypertune.HyperTune()
def score(step):
    return 0.99 if step == 3 else 0.9 - step / 1000
for step in range(1, 61):
    reporter.report_hyperparameter_tuning_metric("score", score(step), global_step=step)
go = pathlib.Path(sys.argv[1])
deadline = time.monotonic() + 120
while not go.exists():  # the test lets it go on once the emulator has shown the first 60 reports
    if time.monotonic() > deadline:
        sys.exit("never told to go on")
    time.sleep(0.02)
for step in range(61, 151):
    reporter.report_hyperparameter_tuning_metric("score", score(step), global_step=step)
"""


@pytest.mark.slow
def test_best_measurement_sees_every_report_of_a_trial(grpc_client: Any, tmp_path: Path) -> None:
    from google.cloud.aiplatform_v1 import HyperparameterTuningJob

    go = tmp_path / "go"
    body = {
        "displayName": "many-reports",
        "studySpec": {
            "metrics": [{"metricId": "score", "goal": "MAXIMIZE"}],
            "parameters": [{"parameterId": "x", "integerValueSpec": {"minValue": "1", "maxValue": "1"}}],
            "algorithm": "GRID_SEARCH",
            "measurementSelectionType": "BEST_MEASUREMENT",
        },
        "maxTrialCount": 1,
        "parallelTrialCount": 1,
        "trialJobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": "1",
                    "containerSpec": {
                        "imageUri": "python:3.11",
                        "command": [sys.executable, "-c", TRAINER, str(go)],
                    },
                }
            ]
        },
    }
    job = grpc_client.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=HyperparameterTuningJob.from_json(json.dumps(body))
    )

    def first_reports() -> Any:
        trials = grpc_client.get_hyperparameter_tuning_job(name=job.name).trials
        return trials[0] if trials and len(trials[0].measurements) == 60 else None

    # the running trial shows its measurements (Trial.measurements: "used for early stopping")
    trial = poll_until(first_reports, timeout=120, interval=0.05, what="the first 60 reports, published")
    assert trial.state.name == "ACTIVE"
    assert [int(m.step_count) for m in trial.measurements] == list(range(1, 61))
    go.touch()
    done = wait_for_state(grpc_client, job.name, ["JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"], timeout=120)
    assert done.state.name == "JOB_STATE_SUCCEEDED", done.error.message
    (trial,) = done.trials
    assert trial.state.name == "SUCCEEDED"
    assert [int(m.step_count) for m in trial.measurements] == list(range(1, 151))
    assert int(trial.final_measurement.step_count) == 3
    assert [(m.metric_id, m.value) for m in trial.final_measurement.metrics] == [("score", 0.99)]
