"""The emulator's own Create rules (``vertex_emulator.rules``): their sources, their reading of proto3
defaults, and the service's answer layout. Verdicts on many layouts: ``tests/test_differential.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import vertex_emulator.rules as rules_pkg
from vertex_emulator.rules import check_create, format_problems
from vertex_emulator.rules.sources import RULES
from vertex_emulator.rules.tasks import NUL_RULE

RULES_DIR = Path(rules_pkg.__file__).parent
MACHINE = {"machineType": "n1-standard-4"}
POOL = {"machineSpec": MACHINE, "replicaCount": "1", "containerSpec": {"imageUri": "i"}}


def _custom(body: dict[str, Any]) -> Any:
    from google.cloud import aiplatform_v1

    return aiplatform_v1.CustomJob.from_json(json.dumps(body))


def _check(body: dict[str, Any], location: str = "us-central1") -> list[str]:
    return check_create("customJobs", _custom(body), location)


def test_every_rule_has_a_source_and_a_module_that_names_it() -> None:
    code = {path.name: path.read_text() for path in RULES_DIR.glob("*.py") if path.name != "sources.py"}
    for rule in RULES.values():
        assert rule.source and rule.text, rule
        assert re.search(r"https://|proto|issue", rule.source), rule
        named = [name for name, text in code.items() if f"``{rule.rule_id}``" in text]
        assert named, f"no rule module cites {rule.rule_id}"


def test_the_emulator_reads_nothing_of_the_provider() -> None:
    for path in RULES_DIR.parent.rglob("*.py"):
        assert "airflow_vertex_dist" not in path.read_text(), path


def test_answers_in_the_services_layout() -> None:
    problems = ["job_spec.worker_pool_specs[0].replica_count: must be 1", "display_name: too long"]
    text = format_problems(problems)
    assert text == (
        "List of found errors:\t1.Field: job_spec.worker_pool_specs[0].replica_count; Message: must be 1\t"
        "2.Field: display_name; Message: too long\t"
    )


def test_required_fields_as_the_service_names_them() -> None:
    assert check_create("customJobs", _custom({}), "us-central1") == [
        "custom_job.display_name: Required field is not set.",
        "custom_job.job_spec: Required field is not set.",
    ]
    problems = _check({"displayName": "x", "jobSpec": {"workerPoolSpecs": [{**POOL, "containerSpec": {}}]}})
    assert problems == [
        "custom_job.job_spec.worker_pool_specs[0].container_spec.image_uri: Required field is not set."
    ]


def test_proto3_defaults_a_required_number_at_zero_and_skipped_pools() -> None:
    from google.cloud import aiplatform_v1

    # integer bounds of 0 are values (Required numbers), and [0, 0] is a one-value range
    tuning = aiplatform_v1.HyperparameterTuningJob.from_json(
        json.dumps(
            {
                "displayName": "t",
                "maxTrialCount": 1,
                "parallelTrialCount": 1,
                "studySpec": {
                    "metrics": [{"metricId": "m", "goal": "MAXIMIZE"}],
                    "parameters": [{"parameterId": "n", "integerValueSpec": {}}],
                },
                "trialJobSpec": {"workerPoolSpecs": [POOL]},
            }
        )
    )
    assert check_create("hyperparameterTuningJobs", tuning, "us-central1") == []
    # empty pools keep positions and are not walked; a trailing one is a skipped pool too
    assert _check({"displayName": "x", "jobSpec": {"workerPoolSpecs": [POOL, {}, POOL, {}]}}) == []
    # an omitted replicaCount is 0 on the wire: pool 0 must hold 1
    problems = _check({"displayName": "x", "jobSpec": {"workerPoolSpecs": [{**POOL, "replicaCount": "0"}]}})
    assert problems == [
        "job_spec.worker_pool_specs[0].replica_count: worker pool 0 holds the primary replica: replicaCount "
        "must be 1 (got 0)"
    ]


def test_output_only_fields_are_not_judged() -> None:
    body = {
        "displayName": "x",
        "jobSpec": {"workerPoolSpecs": [POOL]},
        "state": "JOB_STATE_FAILED",
        "error": {"code": 3},
        "webAccessUris": {"workerpool0-0": "u"},
    }
    assert _check(body) == []


@pytest.mark.parametrize(
    ("image", "ok"),
    [
        ("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest", True),
        ("europe-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest", True),
        ("asia-docker.pkg.dev/vertex-ai/training/xgboost-cpu.2-1:latest", True),
        ("us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0", True),
        ("us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest", False),  # a serving image
        ("us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest", False),
        ("gcr.io/my-project/trainer:1", False),
        ("python:3.11", False),
    ],
)
def test_python_packages_run_on_prebuilt_training_images(image: str, ok: bool) -> None:
    package = {"executorImageUri": image, "packageUris": ["gs://b/t.tar.gz"], "pythonModule": "t.task"}
    pool = {"machineSpec": MACHINE, "replicaCount": "1", "pythonPackageSpec": package}
    problems = _check({"displayName": "x", "jobSpec": {"workerPoolSpecs": [pool]}})
    assert (problems == []) is ok, problems


def _package_pool(**spec: Any) -> dict[str, Any]:
    package = {
        "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest",
        "packageUris": ["gs://b/t.tar.gz"],
        "pythonModule": "t.task",
        **spec,
    }
    return {"machineSpec": MACHINE, "replicaCount": "1", "pythonPackageSpec": package}


NUL = "a\x00b"
_NUL_CASES = [
    ({**POOL, "containerSpec": {"imageUri": NUL}}, "container_spec.image_uri"),
    ({**POOL, "containerSpec": {"imageUri": "i", "command": ["python", NUL]}}, "container_spec.command[1]"),
    ({**POOL, "containerSpec": {"imageUri": "i", "args": [NUL]}}, "container_spec.args[0]"),
    (
        {**POOL, "containerSpec": {"imageUri": "i", "env": [{"name": "A", "value": NUL}]}},
        "container_spec.env[0].value",
    ),
    (_package_pool(args=["--x", NUL]), "python_package_spec.args[1]"),
    (_package_pool(packageUris=["gs://b/a.tar.gz", f"gs://b/{NUL}"]), "python_package_spec.package_uris[1]"),
    (_package_pool(pythonModule=NUL), "python_package_spec.python_module"),
    (_package_pool(executorImageUri=NUL), "python_package_spec.executor_image_uri"),
    (_package_pool(env=[{"name": "A", "value": NUL}]), "python_package_spec.env[0].value"),
]


@pytest.mark.parametrize(("pool", "field"), _NUL_CASES, ids=[field for _, field in _NUL_CASES])
def test_a_nul_character_a_process_cannot_receive_is_refused_naming_the_field(
    pool: dict[str, Any], field: str
) -> None:
    problems = _check({"displayName": "x", "jobSpec": {"workerPoolSpecs": [pool]}})
    assert problems == [f"job_spec.worker_pool_specs[0].{field}: {NUL_RULE}"]


def test_a_nul_in_a_parameter_id_or_category_is_refused_it_becomes_a_trial_argument() -> None:
    from google.cloud import aiplatform_v1

    def tuning(parameter: dict[str, Any]) -> list[str]:
        body = {
            "displayName": "t",
            "maxTrialCount": 1,
            "parallelTrialCount": 1,
            "studySpec": {"metrics": [{"metricId": "m", "goal": "MAXIMIZE"}], "parameters": [parameter]},
            "trialJobSpec": {"workerPoolSpecs": [POOL]},
        }
        message = aiplatform_v1.HyperparameterTuningJob.from_json(json.dumps(body))
        return check_create("hyperparameterTuningJobs", message, "us-central1")

    assert tuning({"parameterId": NUL, "integerValueSpec": {"minValue": 1, "maxValue": 2}}) == [
        f"study_spec.parameters[0].parameter_id: {NUL_RULE}"
    ]
    assert tuning({"parameterId": "c", "categoricalValueSpec": {"values": ["a", NUL]}}) == [
        f"study_spec.parameters[0].categorical_value_spec.values[1]: {NUL_RULE}"
    ]


@pytest.mark.parametrize(
    "uri", ["dist/t.tar.gz", "/home/me/t.tar.gz", "https://example.com/t.tar.gz", "t.whl"]
)
def test_package_uris_are_cloud_storage_locations(uri: str) -> None:
    problems = _check(
        {"displayName": "x", "jobSpec": {"workerPoolSpecs": [_package_pool(packageUris=[uri])]}}
    )
    assert problems == [
        "job_spec.worker_pool_specs[0].python_package_spec.package_uris[0]: must be the Cloud Storage "
        f"location of a package file, gs://BUCKET/PATH (got {uri!r})"
    ]
    pool = _package_pool(packageUris=["gs://b/t.tar.gz"])
    assert _check({"displayName": "x", "jobSpec": {"workerPoolSpecs": [pool]}}) == []


def test_no_service_limit_on_replicas_trials_or_grid_ranges_none_is_documented() -> None:
    """The v1 protos, the tuning pages and the quotas page give no cap on these: the rules refuse none
    (the host's ceilings, vertex_emulator.capacity.host, are what holds such a job back)."""
    from google.cloud import aiplatform_v1

    workers = {**POOL, "replicaCount": str(2**31 - 1)}
    assert _check({"displayName": "x", "jobSpec": {"workerPoolSpecs": [POOL, workers]}}) == []
    body = {
        "displayName": "t",
        "maxTrialCount": 2**31 - 1,
        "parallelTrialCount": 2**31 - 1,
        "studySpec": {
            "metrics": [{"metricId": "m", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameterId": "n", "integerValueSpec": {"minValue": "0", "maxValue": str(2**62)}}
            ],
            "algorithm": "GRID_SEARCH",
        },
        "trialJobSpec": {"workerPoolSpecs": [POOL]},
    }
    message = aiplatform_v1.HyperparameterTuningJob.from_json(json.dumps(body))
    assert check_create("hyperparameterTuningJobs", message, "us-central1") == []
