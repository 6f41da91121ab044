"""``from_api`` refusing what the service refuses: unknown fields with their path, bad values, undersized
Reduction Servers (a warning from the service, an explicit override in Python), tuning-only rules; and
mutated v1 bodies raising only ValidationError."""

from __future__ import annotations

import copy
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
    error_lines,
)
from airflow_vertex_dist.specs.examples import (
    PARAMETER_SERVER_EXAMPLE,
    SEED_REDUCTION_SERVER,
    TUNING_EXAMPLE,
)

from ._helpers import parse_proto
from .api_specs import SPECS


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
