"""Render a spec dict of the provider's bad-spec table as the v1 request body it stands for, without
validating it (the table's rows are specs the provider refuses, so ``to_api`` cannot render them).

The mapping is the provider's own field-for-field one (``DistributedTrainingJob.to_api``): pools at their
positions with ``{}`` for a skipped one, Reduction Server in pool 2 with its image, ``snake_case`` to
``camelCase``, env as ``{name, value}`` items, parameter kinds as value specs. A key this mapping does not
know is passed through under its camelCase name, so the v1 parser refuses it, as it refuses an enum name
the protos lack: such a row has no v1 form (``v1_or_reason`` says why).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["AUTO_REDUCERS", "Unrenderable", "render", "v1_or_reason"]

#: The count a ``replica_count="auto"`` Reduction Server is rendered with: the seed example's 16 reducers
#: (the v1 body carries a number; the service does not check sizing, and neither side's v1 reading does).
AUTO_REDUCERS = 16
_RS_IMAGE = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
_SCALES = {"LINEAR": "UNIT_LINEAR_SCALE", "LOG": "UNIT_LOG_SCALE", "REVERSE_LOG": "UNIT_REVERSE_LOG_SCALE"}
_VALUE_SPECS = {
    "double": "doubleValueSpec",
    "integer": "integerValueSpec",
    "categorical": "categoricalValueSpec",
    "discrete": "discreteValueSpec",
}
_CONDITIONS = {
    "integer": "parentIntValues",
    "categorical": "parentCategoricalValues",
    "discrete": "parentDiscreteValues",
    "double": "parentDiscreteValues",  # a double parent has no condition of its own
}
_STOPPING = {
    "median_automated_stopping": "medianAutomatedStoppingSpec",
    "decay_curve_stopping": "decayCurveStoppingSpec",
    "convex_automated_stopping": "convexAutomatedStoppingSpec",
}


class Unrenderable(ValueError):
    """A spec dict with no v1 form."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _camel_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return {_camel(str(k)): _camel_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_camel_tree(v) for v in value]
    return value


def _duration(value: Any) -> Any:
    return f"{value}s" if isinstance(value, int | float) and not isinstance(value, bool) else value


def _env(env: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": name, "value": value} for name, value in env.items()]


def _task(task: dict[str, Any]) -> dict[str, Any]:
    out = _camel_tree({k: v for k, v in task.items() if k != "env"})
    if "env" in task:
        out["env"] = _env(task["env"])
    return out


def _pool(pool: dict[str, Any]) -> dict[str, Any]:
    known = {"machine", "replica_count", "disk", "container", "python_package"}
    out: dict[str, Any] = {"replicaCount": pool.get("replica_count", 1)}
    if "machine" in pool:
        out["machineSpec"] = _camel_tree(pool["machine"])
    if "disk" in pool:
        out["diskSpec"] = _camel_tree(pool["disk"])
    if "container" in pool:
        out["containerSpec"] = _task(pool["container"])
    if "python_package" in pool:
        out["pythonPackageSpec"] = _task(pool["python_package"])
    out.update(_camel_tree({k: v for k, v in pool.items() if k not in known}))
    return out


def _reducers(rs: dict[str, Any]) -> dict[str, Any]:
    count = rs.get("replica_count", "auto")
    machine: dict[str, Any] = {"machineType": rs.get("machine_type", "n1-highcpu-16")}
    for key in ("accelerator_type", "accelerator_count"):
        if key in rs:
            machine[_camel(key)] = rs[key]
    if "reservation_affinity" in rs:
        machine["reservationAffinity"] = _camel_tree(rs["reservation_affinity"])
    container: dict[str, Any] = {"imageUri": rs.get("image_uri") or _RS_IMAGE}
    for key in ("command", "args"):
        if key in rs:
            container[key] = list(rs[key])
    if "env" in rs:
        container["env"] = _env(rs["env"])
    out: dict[str, Any] = {
        "machineSpec": machine,
        "replicaCount": AUTO_REDUCERS if count == "auto" else count,
        "containerSpec": container,
    }
    if "disk" in rs:
        out["diskSpec"] = _camel_tree(rs["disk"])
    return out


def _job_spec(job: dict[str, Any], *, trial: bool = False) -> dict[str, Any]:
    """A ``CustomJobSpec``; a trial job's labels and key stay in it (v1 has no place for them there)."""
    if "parameter_servers" in job and "reduction_server" in job:
        raise Unrenderable("parameter servers and a Reduction Server: v1 has one pool at position 2")
    server = job.get("parameter_servers")
    pools = [
        _pool(job["primary"]) if "primary" in job else {},
        _pool(job["workers"]) if "workers" in job else {},
        _pool(server)
        if server
        else (_reducers(job["reduction_server"]) if "reduction_server" in job else {}),
        _pool(job["evaluators"]) if "evaluators" in job else {},
    ]
    while pools and not pools[-1]:
        pools.pop()
    spec: dict[str, Any] = {"workerPoolSpecs": pools}
    skip = {
        "display_name", "location", "primary", "workers", "parameter_servers", "reduction_server",
        "evaluators", "scheduling", "base_output_directory",
    }  # fmt: skip
    if not trial:
        skip |= {"labels", "encryption_key"}
    if "scheduling" in job:
        sched = dict(job["scheduling"])
        for key in ("timeout", "max_wait_duration"):
            if key in sched:
                sched[key] = _duration(sched[key])
        spec["scheduling"] = _camel_tree(sched)
    if "base_output_directory" in job:
        spec["baseOutputDirectory"] = {"outputUriPrefix": job["base_output_directory"]}
    spec.update(_camel_tree({k: v for k, v in job.items() if k not in skip}))
    return spec


def _parameter(param: dict[str, Any]) -> dict[str, Any]:
    kind = param.get("type")
    skip = {
        "type",
        "parameter_id",
        "scale_type",
        "conditional_parameters",
        "min_value",
        "max_value",
        "values",
    }
    out: dict[str, Any] = {"parameterId": param.get("parameter_id", "")}
    if kind in _VALUE_SPECS:
        value = {_camel(k): param[k] for k in ("min_value", "max_value", "values") if k in param}
        out[_VALUE_SPECS[kind]] = value
    else:  # no kind: its fields stay where the spec put them, which v1 does not have
        out.update(_camel_tree({k: param[k] for k in ("min_value", "max_value", "values") if k in param}))
    if param.get("scale_type") is not None:
        out["scaleType"] = _SCALES.get(param["scale_type"], param["scale_type"])
    children = param.get("conditional_parameters") or []
    if children:
        condition = _CONDITIONS.get(str(kind), "parentDiscreteValues")
        out["conditionalParameterSpecs"] = [
            {
                condition: {"values": list(c.get("parent_values", []))},
                "parameterSpec": _parameter(c["parameter"]),
            }
            for c in children
        ]
    out.update(_camel_tree({k: v for k, v in param.items() if k not in skip}))
    return out


def _study(study: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "metrics": [_camel_tree(m) for m in study.get("metrics", [])],
        "parameters": [_parameter(p) for p in study.get("parameters", [])],
    }
    for key, value in study.items():
        if key in ("metrics", "parameters"):
            continue
        out[_STOPPING.get(key, _camel(key))] = _camel_tree(value)
    return out


def render(data: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    """``(kind, v1 body, location)`` of a spec dict: a ``DistributedTrainingJob`` or, with a ``study``,
    a ``HyperparameterTuningJob``. Raises ``Unrenderable`` for a layout v1 cannot hold."""
    if "study" in data:
        trial = dict(data["trial_job"])
        location = data.get("location") or trial.get("location") or "us-central1"
        if trial.get("location") not in (None, location):
            raise Unrenderable("two locations: a v1 request has one, its parent's")
        body: dict[str, Any] = {
            "displayName": data.get("display_name") or trial.get("display_name", ""),
            "studySpec": _study(data["study"]),
            "maxTrialCount": data.get("max_trial_count", 0),
            "parallelTrialCount": data.get("parallel_trial_count", 1),
            "trialJobSpec": _job_spec(trial, trial=True),
        }
        if "max_failed_trial_count" in data:
            body["maxFailedTrialCount"] = data["max_failed_trial_count"]
        kind = "hyperparameterTuningJobs"
    else:
        location = data.get("location") or "us-central1"
        body = {"displayName": data.get("display_name", ""), "jobSpec": _job_spec(data)}
        kind = "customJobs"
    if "labels" in data:
        body["labels"] = data["labels"]
    if "encryption_key" in data:
        body["encryptionSpec"] = {"kmsKeyName": data["encryption_key"]}
    return kind, body, location


def v1_or_reason(data: dict[str, Any]) -> tuple[str, dict[str, Any], str] | str:
    """``render(data)`` when the result is a v1 message (it parses as the proto), else why not."""
    from google.cloud import aiplatform_v1

    try:
        kind, body, location = render(data)
    except Unrenderable as exc:
        return str(exc)
    resource = "CustomJob" if kind == "customJobs" else "HyperparameterTuningJob"
    try:
        getattr(aiplatform_v1, resource).from_json(json.dumps(body))
    except Exception as exc:  # the proto JSON parser's own errors (ParseError, ValueError, ...)
        return f"the v1 parser refuses it: {str(exc).splitlines()[0][:160]}"
    return kind, body, location
