"""Builders of the v1 Create bodies the differential corpus's hand cases are written in (camelCase JSON,
as the REST API takes it): machines, worker pools, custom and tuning jobs, study parameters."""

from __future__ import annotations

from typing import Any

__all__ = [
    "A100",
    "DAY",
    "EXEC",
    "FLEX_START",
    "IMG",
    "RS",
    "T4",
    "V100X8",
    "categorical_param",
    "child_param",
    "custom",
    "discrete_param",
    "double_param",
    "int_param",
    "machine",
    "package",
    "pool",
    "reducers",
    "tuning",
]


IMG = "example.com/ml/trainer:1.0"
RS = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
EXEC = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest"
DAY = 24 * 3600


def machine(
    machine_type: str = "n1-standard-4", accelerator: str | None = None, count: int = 0
) -> dict[str, Any]:
    out: dict[str, Any] = {"machineType": machine_type}
    if accelerator:
        out.update(acceleratorType=accelerator, acceleratorCount=count)
    return out


V100X8 = machine("n1-highmem-96", "NVIDIA_TESLA_V100", 8)
T4 = machine("n1-standard-8", "NVIDIA_TESLA_T4", 1)
A100 = machine("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1)


def pool(spec: dict[str, Any] | None = None, replicas: int | None = 1, **task: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"machineSpec": spec or machine()}
    if replicas is not None:
        out["replicaCount"] = replicas
    out.update(task or {"containerSpec": {"imageUri": IMG}})
    return out


def package(image: str = EXEC, **extra: Any) -> dict[str, Any]:
    return {"pythonPackageSpec": {"executorImageUri": image, "packageUris": ["gs://b/t.tar.gz"],
                                  "pythonModule": "trainer.task", **extra}}  # fmt: skip


def reducers(count: int = 16, spec: dict[str, Any] | None = None, image: str = RS) -> dict[str, Any]:
    return pool(spec or machine("n1-highcpu-16"), count, containerSpec={"imageUri": image})


def custom(*pools: dict[str, Any], name: str = "job", labels: Any = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "displayName": name,
        "jobSpec": {"workerPoolSpecs": list(pools or [pool()]), **spec},
    }
    if labels is not None:
        body["labels"] = labels
    return body


def tuning(params: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    study = fields.pop("study", {})
    body: dict[str, Any] = {
        "displayName": "tune",
        "studySpec": {
            "metrics": fields.pop("metrics", [{"metricId": "acc", "goal": "MAXIMIZE"}]),
            "parameters": params
            or [{"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}],
            **study,
        },
        "maxTrialCount": 4,
        "parallelTrialCount": 2,
        "trialJobSpec": {"workerPoolSpecs": [pool()]},
    }
    body.update(fields)
    return body


def int_param(pid: str, low: int, high: int, **extra: Any) -> dict[str, Any]:
    return {"parameterId": pid, "integerValueSpec": {"minValue": low, "maxValue": high}, **extra}


def categorical_param(pid: str, *values: str, **extra: Any) -> dict[str, Any]:
    return {"parameterId": pid, "categoricalValueSpec": {"values": list(values)}, **extra}


def discrete_param(pid: str, *values: float, **extra: Any) -> dict[str, Any]:
    return {"parameterId": pid, "discreteValueSpec": {"values": list(values)}, **extra}


def double_param(pid: str, low: float, high: float, **extra: Any) -> dict[str, Any]:
    return {"parameterId": pid, "doubleValueSpec": {"minValue": low, "maxValue": high}, **extra}


def child_param(condition: str, values: list[Any], param: dict[str, Any]) -> dict[str, Any]:
    return {condition: {"values": values}, "parameterSpec": param}


FLEX_START = {"strategy": "FLEX_START", "maxWaitDuration": "3600s"}
