"""``from_api``: v1 JSON bodies back into the model, with the service's rules: round trips, every
field, proto3 defaults. Refusals and mutated bodies: `test_from_api_refusals.py`."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from airflow_vertex_dist.specs import (
    DistributedTrainingJob,
    HyperparameterTuningJob,
    Scheduling,
)
from airflow_vertex_dist.specs.examples import (
    PARAMETER_SERVER_EXAMPLE,
    SEED_REDUCTION_SERVER,
    TUNING_EXAMPLE,
)

from ._helpers import canonical, parse_proto, pool, to_json_body
from .api_specs import FLEX, FULL, SPECS


@pytest.mark.parametrize("name", sorted(SPECS))
def test_round_trip(name: str) -> None:
    spec = SPECS[name]
    body = spec.to_api()
    tuning = isinstance(spec, HyperparameterTuningJob)
    parse_proto(body, tuning)
    assert type(spec).from_api(body).to_api() == body
    # The proto's own JSON (int64 as strings, enums as numbers or names, defaults written out).
    for kwargs in ({}, {"use_integers_for_enums": False}):
        assert canonical(type(spec).from_api(to_json_body(spec, **kwargs)).to_api()) == canonical(body)


def test_full_spec_reaches_every_field() -> None:
    body = FULL.to_api()
    spec = body["jobSpec"]
    assert set(spec) == {
        "workerPoolSpecs",
        "scheduling",
        "serviceAccount",
        "network",
        "reservedIpRanges",
        "pscInterfaceConfig",
        "baseOutputDirectory",
        "protectedArtifactLocationId",
        "tensorboard",
        "enableWebAccess",
        "enableDashboardAccess",
        "persistentResourceId",
        "experiment",
        "experimentRun",
        "models",
    }
    assert spec["scheduling"] == {
        "timeout": "5400s",
        "restartJobOnWorkerRestart": True,
        "strategy": "STANDARD",
        "disableRetries": True,
        "maxWaitDuration": "0s",
    }
    assert FLEX.to_api()["jobSpec"]["scheduling"] == {
        "timeout": "86400s",
        "strategy": "FLEX_START",
        "maxWaitDuration": "1800.500000s",
    }
    assert spec["workerPoolSpecs"][0]["pythonPackageSpec"]["env"] == [
        {"name": "B", "value": "2"},
        {"name": "A", "value": "$(B)"},
    ]
    assert spec["workerPoolSpecs"][2]["containerSpec"]["imageUri"].startswith("europe-docker.pkg.dev/")
    assert body["encryptionSpec"] == {"kmsKeyName": FULL.encryption_key}
    assert body["labels"] == {"team": "ml", "env": "prod"}


def test_from_api_ignores_output_only_fields() -> None:
    body = SEED_REDUCTION_SERVER.to_api()
    body.update(
        {
            "name": "projects/1/locations/us-central1/customJobs/2",
            "state": "JOB_STATE_RUNNING",
            "createTime": "2026-01-01T00:00:00Z",
            "webAccessUris": {"workerpool0-0": "https://x"},
        }
    )
    assert DistributedTrainingJob.from_api(body).to_api() == SEED_REDUCTION_SERVER.to_api()


def test_durations_accept_seconds_strings_numbers_and_iso() -> None:
    assert Scheduling(timeout="90s").to_api() == {"timeout": "90s"}
    assert Scheduling.model_validate({"timeout": 1.25}).to_api() == {"timeout": "1.250000s"}
    assert Scheduling.model_validate({"timeout": "PT2H"}).to_api() == {"timeout": "7200s"}
    assert json.loads(Scheduling(timeout="3600s").model_dump_json())["timeout"] == "3600s"


def test_tuning_display_name_defaults_to_trial_job() -> None:
    spec = HyperparameterTuningJob(
        trial_job=TUNING_EXAMPLE.trial_job, study=TUNING_EXAMPLE.study, max_trial_count=3
    )
    assert spec.to_api()["displayName"] == "tune-trainer-trial"
    assert spec.to_api()["parallelTrialCount"] == 1 and "maxFailedTrialCount" not in spec.to_api()


def test_pool_helper_builds_valid_pools() -> None:
    assert pool(replicas=2).replica_count == 2


def test_deprecated_strategy_refused_in_specs_but_accepted_from_the_api() -> None:
    with pytest.raises(ValidationError, match="LOW_COST is deprecated"):
        Scheduling(strategy="LOW_COST")
    body = PARAMETER_SERVER_EXAMPLE.to_api()
    body["jobSpec"]["scheduling"] = {"strategy": "ON_DEMAND"}
    spec = DistributedTrainingJob.from_api(body)
    assert spec.scheduling is not None and spec.scheduling.strategy == "ON_DEMAND"
    assert spec.to_api() == body


def test_from_api_reads_proto3_defaults() -> None:
    """A v1 body leaves zero values out (proto3): from_api reads them as zeros, not as missing."""
    body = TUNING_EXAMPLE.to_api()
    body["studySpec"]["parameters"] = [
        {"parameterId": "lr", "doubleValueSpec": {"maxValue": 1.0}},  # min 0
        {"parameterId": "shift", "doubleValueSpec": {"minValue": -1.0}},  # max 0
        {"parameterId": "n", "integerValueSpec": {"maxValue": "3"}},
    ]
    spec = HyperparameterTuningJob.from_api(body)
    lr, shift, n = spec.study.parameters
    assert (lr.min_value, lr.max_value, shift.max_value, n.min_value) == (0.0, 1.0, 0.0, 0)
    assert HyperparameterTuningJob.from_api(spec.to_api()) == spec


def test_from_api_keeps_strings_ending_in_unspecified() -> None:
    body = DistributedTrainingJob.from_api(TUNING_EXAMPLE.trial_job.to_api()).to_api()
    container = body["jobSpec"]["workerPoolSpecs"][0].setdefault("containerSpec", {})
    container["env"] = [
        {"name": "MODE", "value": "ACCELERATOR_TYPE_UNSPECIFIED"},
        {"name": "X_UNSPECIFIED", "value": "1"},
    ]
    spec = DistributedTrainingJob.from_api(body)
    assert spec.primary.container is not None
    assert dict(spec.primary.container.env) == {"MODE": "ACCELERATOR_TYPE_UNSPECIFIED", "X_UNSPECIFIED": "1"}


def test_from_api_reads_to_json_of_an_empty_convex_spec() -> None:
    from google.cloud import aiplatform_v1

    body = TUNING_EXAMPLE.to_api()
    body["studySpec"]["convexAutomatedStoppingSpec"] = {}
    message = aiplatform_v1.HyperparameterTuningJob.from_json(json.dumps(body))
    as_json = json.loads(aiplatform_v1.HyperparameterTuningJob.to_json(message))
    assert as_json["studySpec"]["convexAutomatedStoppingSpec"]["maxStepCount"] == "0"
    spec = HyperparameterTuningJob.from_api(as_json)
    assert spec.study.convex_automated_stopping is not None
    assert spec.study.convex_automated_stopping.max_step_count is None
    assert spec.to_api()["studySpec"]["convexAutomatedStoppingSpec"] == {}


def test_from_api_takes_max_wait_duration_with_any_strategy() -> None:
    for scheduling in ({"maxWaitDuration": "0s"}, {"maxWaitDuration": "60s", "strategy": "SPOT"}):
        body = TUNING_EXAMPLE.trial_job.to_api()
        body["jobSpec"]["scheduling"] = scheduling
        spec = DistributedTrainingJob.from_api(body)
        assert spec.scheduling is not None and spec.to_api()["jobSpec"]["scheduling"] == scheduling
    # written in Python, a non-zero wait that would do nothing is still pointed out; 0s is fine
    assert Scheduling(max_wait_duration="0s").to_api() == {"maxWaitDuration": "0s"}
    with pytest.raises(ValidationError, match="only applies to strategy FLEX_START"):
        Scheduling(strategy="SPOT", max_wait_duration="60s")


def test_a_zero_min_step_count_is_the_protos_unset_value() -> None:
    """``minStepCount`` is a plain int64 (no presence): 0 reads back as missing, so it is not sent, and a
    spec with 0 round-trips through the API body (a property test's counterexample)."""
    from airflow_vertex_dist.specs.stopping import ConvexAutomatedStopping

    assert ConvexAutomatedStopping(min_step_count=0).to_api() == {}
    assert ConvexAutomatedStopping(min_step_count=3).to_api() == {"minStepCount": 3}
    body = TUNING_EXAMPLE.to_api()
    body["studySpec"]["convexAutomatedStoppingSpec"] = ConvexAutomatedStopping(min_step_count=0).to_api()
    assert HyperparameterTuningJob.from_api(body).to_api() == body
