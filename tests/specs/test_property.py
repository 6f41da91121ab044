"""Property: any generated dict either validates — and then its render parses as the v1 proto
and round-trips through ``from_api`` — or raises pydantic's ValidationError, nothing else.

The strategies (`strategies.py`) mostly draw plausible values (real machine types, GPU counts, pool
layouts) so that a good share of examples is valid, and mix in junk at every level."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from airflow_vertex_dist.specs import DistributedTrainingJob, HyperparameterTuningJob, error_lines

from ._helpers import parse_proto
from .strategies import JSON, jobs, tunings

VALID_SHARE = 0.1


def _check(
    model: type[DistributedTrainingJob] | type[HyperparameterTuningJob], data: Any, counts: Counter[str]
) -> None:
    try:
        spec = model.model_validate(data)
    except ValidationError as exc:
        assert error_lines(exc)  # every refusal explains itself
        counts["invalid"] += 1
        return
    counts["valid"] += 1
    body = spec.to_api()
    parse_proto(body, tuning=model is HyperparameterTuningJob)
    assert model.from_api(body).to_api() == body


def test_job_dicts_validate_or_raise_validation_error() -> None:
    counts: Counter[str] = Counter()

    @settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(jobs())
    def run(data: Any) -> None:
        _check(DistributedTrainingJob, data, counts)

    run()
    assert counts["valid"] >= VALID_SHARE * sum(counts.values()), counts
    assert counts["invalid"] > 0, counts


def test_tuning_dicts_validate_or_raise_validation_error() -> None:
    counts: Counter[str] = Counter()

    @settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(tunings())
    def run(data: Any) -> None:
        _check(HyperparameterTuningJob, data, counts)

    run()
    assert counts["valid"] >= VALID_SHARE * sum(counts.values()), counts
    assert counts["invalid"] > 0, counts


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    st.dictionaries(
        st.sampled_from(["display_name", "primary", "workers", "reduction_server", "labels", "x"]), JSON
    )
)
def test_arbitrary_json_only_raises_validation_error(data: dict[str, Any]) -> None:
    try:
        DistributedTrainingJob.model_validate(data)
    except ValidationError:
        pass
    try:
        DistributedTrainingJob.from_api(data)
    except ValidationError:
        pass


#: any number, however extreme: every int (far past int64), every float (inf, -inf and nan included),
#: a bool (an int to Python) and a string of digits of any length
EXTREME_NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=2**62).flatmap(lambda n: st.sampled_from([n, -n, 10 * n, n**7])),
    st.floats(),
    st.booleans(),
    st.text(alphabet="0123456789", min_size=1, max_size=60),
)


@pytest.mark.parametrize(
    "path",
    [
        "trial_job.scheduling.timeout",
        "trial_job.primary.replica_count",
        "trial_job.primary.machine.accelerator_count",
        "trial_job.primary.disk.boot_disk_size_gb",
        "trial_job.reduction_server.replica_count",
        "study.parameters.0.min_value",
        "study.parameters.1.values.0",
        "study.parameters.1.conditional_parameters.0.parent_values.0",
        "max_trial_count",
    ],
)
@settings(max_examples=25, deadline=None)
@given(value=EXTREME_NUMBERS)
@example(value=10**400)
@example(value=-(10**400))
@example(value=2**63)
@example(value=float("inf"))
@example(value=float("-inf"))
@example(value=float("nan"))
@example(value=1e308)
@example(value=-1e308)
@example(value=True)
@example(value="9" * 30)
def test_extreme_numbers_only_raise_validation_error(path: str, value: Any) -> None:
    data: dict[str, Any] = {
        "trial_job": {
            "display_name": "t",
            "primary": {
                "machine": {
                    "machine_type": "n1-standard-4",
                    "accelerator_type": "NVIDIA_TESLA_T4",
                    "accelerator_count": 1,
                },
                "container": {"image_uri": "trainer"},
                "disk": {},
            },
            "reduction_server": {},
            "scheduling": {},
        },
        "study": {
            "metrics": [{"metric_id": "m", "goal": "MAXIMIZE"}],
            "parameters": [
                {"type": "double", "parameter_id": "a", "min_value": 0.1, "max_value": 1.0},
                {
                    "type": "discrete",
                    "parameter_id": "b",
                    "values": [1.0, 2.0],
                    "conditional_parameters": [
                        {
                            "parent_values": [1.0],
                            "parameter": {"type": "categorical", "parameter_id": "c", "values": ["x"]},
                        }
                    ],
                },
            ],
        },
        "max_trial_count": 3,
    }
    node: Any = data
    parts = [int(p) if p.isdigit() else p for p in path.split(".")]
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value
    try:
        spec = HyperparameterTuningJob.model_validate(data)
    except ValidationError:
        return
    body = spec.to_api()
    parse_proto(body, tuning=True)
    assert HyperparameterTuningJob.from_api(body).to_api() == body
