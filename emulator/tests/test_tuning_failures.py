"""Failed trials as Google's tuning page describes them, through the stock clients (gRPC and REST).

"Create a hyperparameter tuning job", section "Handle failed trials"
(https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/
using-hyperparameter-tuning, read 2026-12-06):
"The `maxFailedTrialCount` value must be less than or equal to `maxTrialCount`", and with it unset or 0
"If the first trial of your job fails, [the service] ends the job immediately."
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from vertex_emulator import testing

pytestmark = pytest.mark.slow

#: trial 1 (grid search: x=1) dies with a clear error; every other trial reports its metric
TRAINER = """
import sys, hypertune
x = int(next(a for a in sys.argv if a.startswith("--x=")).split("=")[1])
if x == 1:
    sys.exit("trainer broke: cannot open the training data (x=1)")
hypertune.HyperTune().report_hyperparameter_tuning_metric("score", float(x), global_step=1)
"""


def _body(max_failed: int | None = None, max_trials: int = 4) -> dict[str, Any]:
    body = testing.tuning_job("first-trial", max_trials=max_trials, parallel=1)
    body["trialJobSpec"]["workerPoolSpecs"][0]["containerSpec"]["command"] = [sys.executable, "-c", TRAINER]
    if max_failed is not None:
        body["maxFailedTrialCount"] = max_failed
    return body


def _client(em: Any, transport: str) -> Any:
    return testing.grpc_client(em) if transport == "grpc" else testing.rest_client(em)


def _create(client: Any, body: dict[str, Any]) -> Any:
    from google.cloud import aiplatform_v1

    message = aiplatform_v1.HyperparameterTuningJob.from_json(json.dumps(body))
    return client.create_hyperparameter_tuning_job(parent=testing.PARENT, hyperparameter_tuning_job=message)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
@pytest.mark.parametrize("max_failed", [None, 0])
def test_a_failed_first_trial_ends_the_job_at_once(
    tmp_path: Path, transport: str, max_failed: int | None
) -> None:
    with testing.running_emulator(tmp_path) as em:
        client = _client(em, transport)
        try:
            job = _create(client, _body(max_failed))
            done = testing.wait_for_state(
                client, job.name, ["JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"], timeout=60
            )
        finally:
            client.transport.close()
    assert done.state.name == "JOB_STATE_FAILED"
    # ended at once: no trial after the first
    assert [(t.id, t.state.name) for t in done.trials] == [("1", "INFEASIBLE")]
    message = done.error.message
    assert "first trial" in message and "maxFailedTrialCount" in message
    # the trial's own error reaches the job's error
    assert "trainer broke: cannot open the training data (x=1)" in message
    assert "trainer broke" in done.trials[0].infeasible_reason


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_set_max_failed_trial_count_lets_the_study_go_on(tmp_path: Path, transport: str) -> None:
    with testing.running_emulator(tmp_path) as em:
        client = _client(em, transport)
        try:
            job = _create(client, _body(max_failed=2))
            done = testing.wait_for_state(
                client, job.name, ["JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"], timeout=60
            )
        finally:
            client.transport.close()
    assert done.state.name == "JOB_STATE_SUCCEEDED", done.error.message
    assert [t.state.name for t in done.trials] == ["INFEASIBLE", "SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_max_failed_trial_count_above_max_trial_count_is_refused(tmp_path: Path, transport: str) -> None:
    from google.api_core import exceptions

    with testing.running_emulator(tmp_path) as em:
        client = _client(em, transport)
        try:
            with pytest.raises(exceptions.BadRequest) as refused:  # gRPC: InvalidArgument, a BadRequest
                _create(client, _body(max_failed=5, max_trials=4))
            # equal is fine ("less than or equal to")
            assert _create(client, _body(max_failed=4, max_trials=4)).name
        finally:
            client.transport.close()
    text = str(refused.value)
    assert "max_failed_trial_count" in text and "must not exceed max_trial_count (got 5 > 4)" in text


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_trial_job_on_tpus_is_refused(tmp_path: Path, transport: str) -> None:
    """The same page: "[the service] doesn't support hyperparameter tuning jobs that require TPUs"."""
    from google.api_core import exceptions

    body = _body()
    body["trialJobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {"machineType": "ct5lp-hightpu-4t"}
    with testing.running_emulator(tmp_path) as em:
        client = _client(em, transport)
        try:
            with pytest.raises(exceptions.BadRequest) as refused:
                _create(client, body)
        finally:
            client.transport.close()
    text = str(refused.value)
    assert "trial_job_spec.worker_pool_specs[0].machine_spec" in text
    assert "hyperparameter tuning jobs that require TPUs are not supported (got ct5lp-hightpu-4t)" in text
