"""The stock high-level SDK (``aiplatform.HyperparameterTuningJob`` over REST) runs a study whose
ranges start at 0 to SUCCEEDED on the emulator: the most common search space there is, and one the
wire sends without its zero bounds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from vertex_emulator import testing

pytestmark = pytest.mark.slow

TRAINER = """
import sys, hypertune
args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
score = float(args["lr"]) + int(args["layers"])
hypertune.HyperTune().report_hyperparameter_tuning_metric("score", score, global_step=1)
"""


def test_sdk_tuning_job_with_zero_minimums_succeeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform
    from google.cloud.aiplatform import hyperparameter_tuning as hpt
    from google.cloud.aiplatform import initializer, jobs

    # The SDK polls every few seconds while it waits; only the interval is shortened here.
    monkeypatch.setattr(jobs, "_JOB_WAIT_TIME", 0.2)
    # A fresh SDK configuration for this test (aiplatform.init sets a process-wide one).
    monkeypatch.setattr(initializer, "global_config", initializer._Config())
    with testing.running_emulator(tmp_path) as em:
        initializer.global_config.init(
            project="test-project",
            location="us-central1",
            api_endpoint=em.rest_endpoint,
            api_transport="rest",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        )
        custom_job = aiplatform.CustomJob(
            display_name="sdk-trial",
            worker_pool_specs=[
                {
                    "machine_spec": {"machine_type": "n1-standard-4"},
                    "replica_count": 1,
                    "container_spec": {
                        "image_uri": "python:3.11",
                        "command": [sys.executable, "-c", TRAINER],
                    },
                }
            ],
            base_output_dir="gs://bkt/sdk",
            staging_bucket="gs://bkt/staging",
        )
        job = aiplatform.HyperparameterTuningJob(
            display_name="sdk-zero-min",
            custom_job=custom_job,
            metric_spec={"score": "maximize"},
            parameter_spec={
                "lr": hpt.DoubleParameterSpec(min=0, max=1, scale="linear"),
                "layers": hpt.IntegerParameterSpec(min=0, max=2, scale="linear"),
            },
            max_trial_count=2,
            parallel_trial_count=2,
        )
        job.run(sync=True)
        assert job.state.name == "JOB_STATE_SUCCEEDED"
        sent = job.gca_resource.study_spec.parameters
        assert [(p.parameter_id, p.double_value_spec.min_value) for p in sent[:1]] == [("lr", 0.0)]
        assert sent[1].integer_value_spec.min_value == 0
        trials = job.trials
        assert len(trials) == 2 and all(t.state.name == "SUCCEEDED" for t in trials)
        for trial in trials:
            values = {p.parameter_id: p.value for p in trial.parameters}
            assert 0 <= values["lr"] <= 1 and 0 <= values["layers"] <= 2
            assert trial.final_measurement.metrics[0].value == pytest.approx(values["lr"] + values["layers"])
