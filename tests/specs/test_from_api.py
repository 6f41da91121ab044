"""``from_api``: v1 JSON bodies back into the model, with the service's rules."""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from airflow_vertex_dist.specs import (
    DistributedTrainingJob,
    HyperparameterTuningJob,
    ReductionServer,
    Scheduling,
    error_lines,
)
from airflow_vertex_dist.specs.examples import (
    A2_MEGAGPU_REDUCTION_SERVER,
    EVALUATOR_EXAMPLE,
    PARAMETER_SERVER_EXAMPLE,
    SEED_REDUCTION_SERVER,
    TUNING_EXAMPLE,
)

from ._helpers import canonical, parse_proto, pool, to_json_body

FULL = DistributedTrainingJob.model_validate(
    {
        "display_name": "everything",
        "location": "europe-west4",
        "primary": {
            "machine": {
                "machine_type": "a2-highgpu-1g",
                "accelerator_type": "NVIDIA_TESLA_A100",
                "accelerator_count": 1,
                "gpu_partition_size": "1g.5gb",
                "reservation_affinity": {
                    "reservation_affinity_type": "SPECIFIC_RESERVATION",
                    "key": "compute.googleapis.com/reservation-name",
                    "values": ["projects/p/zones/europe-west4-a/reservations/r"],
                },
            },
            "disk": {"boot_disk_type": "pd-standard", "boot_disk_size_gb": 250},
            "python_package": {
                "executor_image_uri": "europe-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest",
                "package_uris": ["gs://bucket/trainer-0.1.tar.gz"],
                "python_module": "trainer.task",
                "args": ["--epochs=2"],
                "env": {"B": "2", "A": "$(B)"},
            },
            "nfs_mounts": [{"server": "10.0.0.2", "path": "/export", "mount_point": "data"}],
            "lustre_mounts": [
                {"instance_ip": "10.0.0.3", "volume_handle": "v", "filesystem": "fs", "mount_point": "lustre"}
            ],
        },
        "workers": {
            "machine": {
                "machine_type": "a2-highgpu-1g",
                "accelerator_type": "NVIDIA_TESLA_A100",
                "accelerator_count": 1,
            },
            "replica_count": 3,
            "container": {
                "image_uri": "example.com/ml/trainer:1.0",
                "command": ["python", "-m", "t"],
                "args": ["-v"],
            },
        },
        "reduction_server": {"replica_count": 3, "machine_type": "n2-highcpu-16"},
        "evaluators": {
            "machine": {"machine_type": "e2-standard-4"},
            "container": {"image_uri": "example.com/e:1"},
        },
        "scheduling": {
            "timeout": "5400s",
            "restart_job_on_worker_restart": True,
            "strategy": "SPOT",
            "disable_retries": True,
            "max_wait_duration": 0,  # "If set to 0, the job will wait indefinitely": a value, any strategy
        },
        "service_account": "trainer@p.iam.gserviceaccount.com",
        "network": "projects/123/global/networks/vpc",
        "reserved_ip_ranges": ["vertex-range"],
        "psc_interface_config": {
            "network_attachment": "projects/p/regions/europe-west4/networkAttachments/na",
            "dns_peering_configs": [{"domain": "corp.", "target_project": "p", "target_network": "n"}],
        },
        "base_output_directory": "gs://bucket/out",
        "protected_artifact_location_id": "europe-west1",
        "tensorboard": "projects/p/locations/europe-west4/tensorboards/1",
        "enable_web_access": True,
        "enable_dashboard_access": True,
        "persistent_resource_id": "pool-1",
        "experiment": "projects/p/locations/europe-west4/metadataStores/default/contexts/exp",
        "experiment_run": "projects/p/locations/europe-west4/metadataStores/default/contexts/exp-run1",
        "models": ["projects/p/locations/europe-west4/models/m@2"],
        "labels": {"team": "ml", "env": "prod"},
        "encryption_key": "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k",
    }
)

_A100 = {"machine_type": "a2-highgpu-1g", "accelerator_type": "NVIDIA_TESLA_A100", "accelerator_count": 1}
#: flex-start: every pool one machine with an A100 (the DWS page's requirements), a non-zero wait
FLEX = DistributedTrainingJob.model_validate(
    {
        "display_name": "flex",
        "location": "us-central1",
        "primary": {"machine": _A100, "container": {"image_uri": "example.com/ml/trainer:1.0"}},
        "workers": {
            "machine": _A100,
            "replica_count": 2,
            "container": {"image_uri": "example.com/ml/trainer:1.0"},
        },
        "scheduling": {"timeout": "86400s", "strategy": "FLEX_START", "max_wait_duration": 1800.5},
    }
)

SPECS: dict[str, DistributedTrainingJob | HyperparameterTuningJob] = {
    "flex": FLEX,
    "seed": SEED_REDUCTION_SERVER,
    "a2": A2_MEGAGPU_REDUCTION_SERVER,
    "ps": PARAMETER_SERVER_EXAMPLE,
    "evaluator": EVALUATOR_EXAMPLE,
    "tuning": TUNING_EXAMPLE,
    "full": FULL,
}


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
        "strategy": "SPOT",
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


def _lines(exc: pytest.ExceptionInfo[ValidationError]) -> str:
    return "\n".join(error_lines(exc.value))


def test_from_api_rejects_unknown_fields_with_their_path() -> None:
    body = SEED_REDUCTION_SERVER.to_api()
    body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["gpuCount"] = 8
    with pytest.raises(ValidationError) as info:
        DistributedTrainingJob.from_api(body)
    assert "primary.machine.gpu_count: unknown field (known: machine_type, " in _lines(info)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda b: (
                b["jobSpec"]["workerPoolSpecs"].append({"replicaCount": 1})
                or b["jobSpec"]["workerPoolSpecs"].append({"replicaCount": 1})
            ),
            "worker_pool_specs: at most 4 pools",
        ),
        (
            lambda b: b["jobSpec"].update(workerPoolSpecs=[]),
            "worker_pool_specs: pool 0 (primary) is required",
        ),
        (
            lambda b: b["jobSpec"].update(workerPoolSpecs=[{}, b["jobSpec"]["workerPoolSpecs"][1]]),
            "pool 0 (primary) is required",
        ),
        (
            lambda b: b["jobSpec"]["workerPoolSpecs"][2]["containerSpec"].update(args=["--fast"]),
            "reduction_server: the Reduction Server image takes no command, args or env",
        ),
        (
            lambda b: b["jobSpec"]["workerPoolSpecs"][2]["machineSpec"].update(
                acceleratorType="NVIDIA_TESLA_T4", acceleratorCount=1
            ),
            "reduction_server: reducers must not have accelerators (got NVIDIA_TESLA_T4 x1)",
        ),
        (lambda b: b["jobSpec"]["workerPoolSpecs"][0].update(replicaCount="2"), "primary.replica_count"),
        (
            lambda b: b["jobSpec"]["workerPoolSpecs"][1]["containerSpec"].update(
                imageUri="europe-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:v2"
            ),
            "workers.container.image_uri: the Reduction Server image runs only in worker pool 2",
        ),
        (lambda b: b.pop("displayName"), "display_name: Field required"),
        (
            lambda b: b["jobSpec"]["workerPoolSpecs"][0]["containerSpec"].update(
                env=[{"name": "A"}, {"name": "A"}]
            ),
            "env: duplicate variable name 'A'",
        ),
        (lambda b: b["jobSpec"].update(workerPoolSpecs={"0": {}}), "worker_pool_specs: must be a JSON array"),
        (
            lambda b: b["jobSpec"]["workerPoolSpecs"][0]["machineSpec"].update(acceleratorType=99),
            "primary.machine.accelerator_type: Input should be",
        ),
    ],
)
def test_from_api_refusals(edit: Any, expected: str) -> None:
    body = copy.deepcopy(SEED_REDUCTION_SERVER.to_api())
    edit(body)
    with pytest.raises(ValidationError) as info:
        DistributedTrainingJob.from_api(body)
    assert expected in _lines(info)


def test_from_api_rejects_non_object_body() -> None:
    with pytest.raises(ValidationError):
        DistributedTrainingJob.from_api([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        HyperparameterTuningJob.from_api("x")  # type: ignore[arg-type]


def test_server_side_accepts_undersized_reducers_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    body = SEED_REDUCTION_SERVER.to_api()
    body["jobSpec"]["workerPoolSpecs"][2]["replicaCount"] = 4
    with caplog.at_level(logging.WARNING, logger="airflow_vertex_dist.specs"):
        spec = DistributedTrainingJob.from_api(body)
    assert spec.reduction_server is not None and spec.reduction_server.allow_undersized
    assert spec.to_api() == body
    assert any(
        "use 16 or more" in r.getMessage() and r.name == "airflow_vertex_dist.specs" for r in caplog.records
    )


def test_client_side_undersized_needs_explicit_override(caplog: pytest.LogCaptureFixture) -> None:
    fields = {
        "display_name": "x",
        "primary": SEED_REDUCTION_SERVER.primary,
        "workers": SEED_REDUCTION_SERVER.workers,
    }
    with pytest.raises(ValidationError, match="or set allow_undersized=True"):
        DistributedTrainingJob(**fields, reduction_server=ReductionServer(replica_count=10))
    with caplog.at_level(logging.WARNING, logger="airflow_vertex_dist.specs"):
        spec = DistributedTrainingJob(
            **fields, reduction_server=ReductionServer(replica_count=10, allow_undersized=True)
        )
    assert spec.reducer_count == 10
    assert "10 x n1-highcpu-16 give 320 Gbps, below the 500 Gbps" in caplog.text


def test_tuning_from_api_refusals() -> None:
    body = TUNING_EXAMPLE.to_api()
    body["studySpec"]["observationNoie"] = "HIGH"  # a misspelt field is still refused
    with pytest.raises(ValidationError) as info:
        HyperparameterTuningJob.from_api(body)
    assert "study.observation_noie: unknown field (did you mean observation_noise?)" in _lines(info)
    body = TUNING_EXAMPLE.to_api()
    child = body["studySpec"]["parameters"][2]["conditionalParameterSpecs"][0]
    child["parentIntValues"] = {"values": [1]}
    del child["parentCategoricalValues"]
    with pytest.raises(ValidationError) as info:
        HyperparameterTuningJob.from_api(body)
    assert "parentCategoricalValues (got parentIntValues)" in _lines(info)
    body = TUNING_EXAMPLE.to_api()
    body["studySpec"]["parameters"][0]["doubleValueSpec"]["defaultValue"] = 0.01
    with pytest.raises(ValidationError) as info:
        HyperparameterTuningJob.from_api(body)
    assert "default_value: not supported by HyperparameterTuningJob" in _lines(info)


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


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, (*prefix, index))
    return out


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=5,
)


@st.composite
def _mutated_bodies(draw: st.DrawFn) -> tuple[type[Any], dict[str, Any]]:
    spec = draw(st.sampled_from(sorted(SPECS.items())))[1]
    body = spec.to_api()
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(body) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = body
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(_JSON)
        elif action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["workers", "machine", "primary", "scheduling", "fooBar"]))] = draw(
                _JSON
            )
    return type(spec), body


@settings(max_examples=150, deadline=None, derandomize=True)
@given(_mutated_bodies())
def test_mutated_bodies_only_raise_validation_error(case: tuple[type[Any], dict[str, Any]]) -> None:
    """What the emulator's Create sees: any body is a model or a ValidationError, never a crash."""
    model, body = case
    try:
        spec = model.from_api(body)
    except ValidationError as exc:
        assert error_lines(exc)
        return
    parse_proto(spec.to_api(), tuning=model is HyperparameterTuningJob)


def test_unknown_keys_cannot_pass_for_model_fields() -> None:
    body = PARAMETER_SERVER_EXAMPLE.to_api()
    body["workers"] = {"machine": {"machine_type": "n1-standard-4"}, "container": {"image_uri": "t"}}
    body["jobSpec"]["workerPoolSpecs"][0]["disk"] = {"boot_disk_size_gb": 200}
    with pytest.raises(ValidationError) as info:
        DistributedTrainingJob.from_api(body)
    text = _lines(info)
    assert "workers: unknown field (not a field of the v1 request body)" in text
    assert "primary.disk: unknown field (not a field of the v1 request body)" in text


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
