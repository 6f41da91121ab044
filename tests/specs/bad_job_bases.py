"""The valid bases the bad-spec table's rows edit (`bad_job_cases.py`, `bad_study_cases.py`), the helpers
that edit them, and the machines and names the rows share."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = [
    "A100",
    "AT",
    "CPU",
    "Case",
    "EXEC_IMG",
    "GPU",
    "IMG",
    "J",
    "PARAM",
    "RS",
    "RS_IMG",
    "T",
    "T4",
    "V100X8",
    "job_base",
    "tuning_base",
]

#: (case id, spec dict, expected field path, expected rule text)
Case = tuple[str, dict[str, Any], str, str]

IMG = "example.com/ml/trainer:1.0"
#: a prebuilt training container, what a python package runs on ("You must use an image from this list")
EXEC_IMG = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest"
RS_IMG = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
V100X8 = {"machine_type": "n1-highmem-96", "accelerator_type": "NVIDIA_TESLA_V100", "accelerator_count": 8}
A100 = {"machine_type": "a2-highgpu-1g", "accelerator_type": "NVIDIA_TESLA_A100", "accelerator_count": 1}


def job_base() -> dict[str, Any]:
    return {
        "display_name": "job",
        "primary": {"machine": dict(V100X8), "container": {"image_uri": IMG}},
        "workers": {"machine": dict(V100X8), "replica_count": 4, "container": {"image_uri": IMG}},
    }


def tuning_base() -> dict[str, Any]:
    return {
        "trial_job": {
            "display_name": "trial",
            "primary": {"machine": {"machine_type": "n1-standard-4"}, "container": {"image_uri": IMG}},
        },
        "study": {
            "metrics": [{"metric_id": "accuracy", "goal": "MAXIMIZE"}],
            "parameters": [{"type": "double", "parameter_id": "lr", "min_value": 0.001, "max_value": 0.1}],
        },
        "max_trial_count": 4,
        "parallel_trial_count": 2,
    }


def _set(base: Callable[[], dict[str, Any]], *edits: tuple[str, Any]) -> dict[str, Any]:
    """Apply ``("a.b.0.c", value)`` edits to a fresh base dict; value ``...`` deletes the key."""
    data = copy.deepcopy(base())
    for path, value in edits:
        parts: list[Any] = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = data
        for part in parts[:-1]:
            node = node[part]
        if value is ...:
            del node[parts[-1]]
        else:
            node[parts[-1]] = value
    return data


def GPU(accelerator_type: str, count: int) -> dict[str, Any]:
    return {"accelerator_type": accelerator_type, "accelerator_count": count}


def T4(count: int, machine_type: str = "n1-standard-8") -> dict[str, Any]:
    return {"machine_type": machine_type, **GPU("NVIDIA_TESLA_T4", count)}


def J(*edits: tuple[str, Any]) -> dict[str, Any]:
    return _set(job_base, *edits)


def T(*edits: tuple[str, Any]) -> dict[str, Any]:
    return _set(tuning_base, *edits)


RS = {"replica_count": "auto"}
CPU = {"machine_type": "n1-standard-8"}
PARAM = "study.parameters.0"
#: the same parameter as an error names it (the union tag, "double" etc., is not part of the path)
AT = "study.parameters[0]"
