"""Create requests are read as the service reads them: through the v1 proto, with proto3 defaults.

Proto3 leaves zero-valued scalars, ``false``, enum 0 and empty lists off the wire (binary and JSON
alike), so a value of 0 must mean 0, not "missing". Each case runs over gRPC and over REST with the
stock ``JobServiceClient``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    # Jobs stay QUEUED for the length of the module: these tests are about Create, not about running.
    with testing.running_emulator(tmp_path_factory.mktemp("proto3"), faults=_queued()) as em:
        yield em


def _queued() -> Any:
    from vertex_emulator.core.config import Faults

    return Faults(queued_s=3600.0)


@pytest.fixture(scope="module", params=["grpc", "rest"])
def client(request: pytest.FixtureRequest, emulator: Emulator) -> Iterator[Any]:
    client = testing.grpc_client(emulator) if request.param == "grpc" else testing.rest_client(emulator)
    yield client
    client.transport.close()


def _pool(count: int = 1, **container: Any) -> dict[str, Any]:
    return {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": count,
        "container_spec": {
            "image_uri": "python:3.11",
            "command": [sys.executable, "-c", "pass"],
            **container,
        },
    }


def _custom_job(**spec: Any) -> dict[str, Any]:
    spec.setdefault("worker_pool_specs", [_pool()])
    return {"display_name": "proto3", "job_spec": spec}


def _tuning_job(parameters: list[dict[str, Any]], **study: Any) -> dict[str, Any]:
    return {
        "display_name": "proto3",
        "study_spec": {
            "metrics": [{"metric_id": "score", "goal": "MAXIMIZE"}],
            "parameters": parameters,
            **study,
        },
        "max_trial_count": 2,
        "parallel_trial_count": 1,
        "trial_job_spec": {"worker_pool_specs": [_pool()]},
    }


def _create_custom(client: Any, body: dict[str, Any]) -> Any:
    return client.create_custom_job(parent=PARENT, custom_job=body)


def _create_tuning(client: Any, body: dict[str, Any]) -> Any:
    return client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=body)


def test_zero_bounds_of_double_and_integer_specs_are_accepted(client: Any) -> None:
    params = [
        {"parameter_id": "lr", "double_value_spec": {"min_value": 0.0, "max_value": 1.0}},
        {"parameter_id": "shift", "double_value_spec": {"min_value": -1.0, "max_value": 0.0}},
        {
            "parameter_id": "layers",
            "integer_value_spec": {"min_value": 0, "max_value": 3},
            "conditional_parameter_specs": [
                {
                    "parent_int_values": {"values": [0]},
                    "parameter_spec": {
                        "parameter_id": "dropout",
                        "double_value_spec": {"min_value": 0.0, "max_value": 0.5},
                    },
                },
                {
                    "parent_int_values": {"values": [1, 2]},
                    "parameter_spec": {
                        "parameter_id": "width",
                        "integer_value_spec": {"min_value": -4, "max_value": 0},
                    },
                },
            ],
        },
    ]
    job = _create_tuning(client, _tuning_job(params))
    spec = job.study_spec.parameters
    assert (spec[0].double_value_spec.min_value, spec[0].double_value_spec.max_value) == (0.0, 1.0)
    assert spec[2].conditional_parameter_specs[1].parameter_spec.integer_value_spec.max_value == 0


def test_zero_zero_range_names_the_rule(client: Any) -> None:
    from google.api_core import exceptions

    # an omitted bound is 0 on the wire: {"min_value": 1} is [1, 0], refused; {} is [0, 0], a one-value
    # range (DoubleValueSpec: "Inclusive minimum value", "Inclusive maximum value")
    params = [{"parameter_id": "lr", "double_value_spec": {"min_value": 1.0}}]
    with pytest.raises(exceptions.BadRequest, match="min_value; Message: must be at most max_value"):
        _create_tuning(client, _tuning_job(params))
    _create_tuning(client, _tuning_job([{"parameter_id": "lr", "double_value_spec": {}}]))


def test_replica_count_zero_or_omitted(client: Any) -> None:
    from google.api_core import exceptions

    # pool 0 must hold exactly one replica; an omitted replica_count is 0 on the wire
    primary = _pool()
    del primary["replica_count"]
    with pytest.raises(
        exceptions.BadRequest,
        match=r"worker_pool_specs\[0\].replica_count; Message: worker pool 0 holds the primary replica: "
        r"replicaCount must be 1 \(got 0\)",
    ):
        _create_custom(client, _custom_job(worker_pool_specs=[primary]))
    # a used pool with 0 replicas is refused, rather than started with none and left out of CLUSTER_SPEC
    with pytest.raises(exceptions.BadRequest, match=r"worker_pool_specs\[1\].replica_count"):
        _create_custom(client, _custom_job(worker_pool_specs=[_pool(), _pool(0)]))
    # an empty pool keeps its position ({} on the wire is replica_count 0 and nothing else)
    job = _create_custom(client, _custom_job(worker_pool_specs=[_pool(), {}, _pool(2)]))
    assert [p.replica_count for p in job.job_spec.worker_pool_specs] == [1, 0, 2]


def test_strings_ending_in_unspecified_are_values(client: Any) -> None:
    env = [
        {"name": "MODE", "value": "ACCELERATOR_TYPE_UNSPECIFIED"},
        {"name": "FLAG_UNSPECIFIED", "value": "1"},
    ]
    job = _create_custom(
        client,
        _custom_job(worker_pool_specs=[_pool(env=env, args=["--mode=X_UNSPECIFIED"])], experiment=""),
    )
    container = job.job_spec.worker_pool_specs[0].container_spec
    assert [(e.name, e.value) for e in container.env] == [
        ("MODE", "ACCELERATOR_TYPE_UNSPECIFIED"),
        ("FLAG_UNSPECIFIED", "1"),
    ]


def test_enum_zero_values_are_unset(client: Any) -> None:
    study = {"algorithm": 0, "measurement_selection_type": 0, "observation_noise": 0}
    params = [{"parameter_id": "x", "integer_value_spec": {"min_value": 1, "max_value": 2}, "scale_type": 0}]
    _create_tuning(client, _tuning_job(params, **study))
    machine = {"machine_type": "n1-standard-4", "accelerator_type": 0, "accelerator_count": 0}
    pool = {**_pool(), "machine_spec": machine}
    _create_custom(client, _custom_job(worker_pool_specs=[pool], scheduling={"strategy": 0}))


def test_max_wait_duration_with_any_strategy(client: Any) -> None:
    # Scheduling.max_wait_duration: "if the scheduling strategy is set to [...] FLEX_START. If set to 0,
    # the job will wait indefinitely." The service takes it with any strategy; 0s is a value.
    for scheduling in (
        {"max_wait_duration": "0s"},
        {"max_wait_duration": "3600s"},
        {"strategy": "STANDARD", "max_wait_duration": "0s"},
        {"strategy": "FLEX_START", "max_wait_duration": "0s"},
    ):
        pools = [_pool()]
        if scheduling.get("strategy") == "FLEX_START":  # flex-start needs L4/A100/H100/H200/B200 GPUs
            a100 = {"machine_type": "a2-highgpu-1g", "accelerator_type": "NVIDIA_TESLA_A100"}
            pools = [{**_pool(), "machine_spec": {**a100, "accelerator_count": 1}}]
        job = _create_custom(client, _custom_job(scheduling=scheduling, worker_pool_specs=pools))
        assert job.job_spec.scheduling.max_wait_duration is not None
    from google.api_core import exceptions

    with pytest.raises(exceptions.BadRequest, match="max_wait_duration; Message: must not be negative"):
        _create_custom(client, _custom_job(scheduling={"max_wait_duration": "-1s"}))


def test_every_study_field_is_accepted(client: Any) -> None:
    params = [{"parameter_id": "x", "integer_value_spec": {"min_value": 1, "max_value": 2}}]
    study = {
        "metrics": [
            {"metric_id": "score", "goal": "MAXIMIZE"},
            {
                "metric_id": "loss_ok",
                "goal": "MAXIMIZE",
                "safety_config": {"safety_threshold": 0.0, "desired_min_safe_trials_fraction": 0.5},
            },
        ],
        "observation_noise": "HIGH",
        "study_stopping_config": {
            "should_stop_asap": False,
            "minimum_runtime_constraint": {"max_duration": "60s"},
            "maximum_runtime_constraint": {"end_time": "2030-01-01T00:00:00Z"},
            "min_num_trials": 0,
            "max_num_trials": 5,
            "max_num_trials_no_progress": 2,
            "max_duration_no_progress": "600s",
        },
        "convex_automated_stopping_spec": {},
    }
    body = _tuning_job(params)
    body["study_spec"].update(study)
    job = _create_tuning(client, body)
    assert job.study_spec.observation_noise.name == "HIGH"
    assert job.study_spec.study_stopping_config.max_num_trials == 5
    assert job.study_spec.metrics[1].safety_config.desired_min_safe_trials_fraction == 0.5
