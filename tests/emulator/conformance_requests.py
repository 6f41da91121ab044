"""The Create requests of the conformance test (`test_conformance.py`) and the verdict each must get:
the base requests, what a field's parent must hold, the valid non-zero values, the documented rules that
refuse a value (``RULES``, each with its source), and the builders that set one field of a base request
at its zero or a non-zero value."""

from __future__ import annotations

import copy
import sys
from typing import Any

from vertex_emulator.rules.fields import ROOTS, ProtoField, field_doc, walk

__all__ = [
    "BASE",
    "COMPANIONS",
    "CONTEXT",
    "RULES",
    "SPEC",
    "VALUES",
    "build",
    "cases",
    "expected",
    "output_only",
]


SPEC = "jobSpec"
_POOL = {
    "machineSpec": {"machineType": "n1-standard-4"},
    "replicaCount": "1",
    "containerSpec": {"imageUri": "python:3.11", "command": [sys.executable, "-c", "pass"]},
}
BASE: dict[str, dict[str, Any]] = {
    "CustomJob": {"displayName": "conformance", "jobSpec": {"workerPoolSpecs": [_POOL]}},
    "HyperparameterTuningJob": {
        "displayName": "conformance",
        "studySpec": {
            # two metrics: a safety_config set on the first leaves the second as the objective
            # ("You must provide a separate metric for objective metric")
            "metrics": [{"metricId": "score", "goal": "MAXIMIZE"}, {"metricId": "aux", "goal": "MINIMIZE"}],
            "parameters": [{"parameterId": "x", "integerValueSpec": {"minValue": "-1", "maxValue": "3"}}],
        },
        "maxTrialCount": 2,
        "parallelTrialCount": 1,
        "trialJobSpec": {"workerPoolSpecs": [_POOL]},
    },
}

#: What a field's parent must hold for the field to be set alone: applied to the message at the
#: path suffix (a path ending in these JSON names), before the field is set. Oneof members replace
#: their siblings.
CONTEXT: dict[str, dict[str, Any]] = {
    "workerPoolSpecs.pythonPackageSpec": {
        # "You must use an image from this list" (the prebuilt training containers)
        "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest",
        "packageUris": ["gs://bkt/trainer-0.1.tar.gz"],
        "pythonModule": "trainer.task",
    },
    "machineSpec.reservationAffinity": {
        "reservationAffinityType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/p/zones/us-central1-a/reservations/r"],
    },
    "nfsMounts": {"server": "10.0.0.2", "path": "/export", "mountPoint": "nfs"},
    "lustreMounts": {
        "instanceIp": "10.0.0.3",
        "volumeHandle": "v",
        "filesystem": "fs",
        "mountPoint": "lustre",
    },
    "containerSpec.env": {"name": "A", "value": "b"},
    "pythonPackageSpec.env": {"name": "A", "value": "b"},
    "pscInterfaceConfig": {"networkAttachment": "projects/p/regions/us-central1/networkAttachments/a"},
    "pscInterfaceConfig.dnsPeeringConfigs": {
        "domain": "example.com.",
        "targetProject": "p",
        "targetNetwork": "n",
    },
    "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/out"},
    "encryptionSpec": {"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"},
    "parameters.doubleValueSpec": {"minValue": -1.0, "maxValue": 1.0},
    "parameters.integerValueSpec": {"minValue": "-1", "maxValue": "3"},
    "parameters.categoricalValueSpec": {"values": ["a", "b"]},
    "parameters.discreteValueSpec": {"values": [1.0, 2.0]},
    "parameters.conditionalParameterSpecs": {
        "parentIntValues": {"values": ["1"]},
        "parameterSpec": {"parameterId": "child", "integerValueSpec": {"minValue": "-1", "maxValue": "1"}},
    },
    "parameterSpec.conditionalParameterSpecs": {
        "parentIntValues": {"values": ["1"]},
        "parameterSpec": {
            "parameterId": "grandchild",
            "integerValueSpec": {"minValue": "-1", "maxValue": "1"},
        },
    },
    "parameterSpec.doubleValueSpec": {"minValue": -1.0, "maxValue": 1.0},
    "parameterSpec.integerValueSpec": {"minValue": "-1", "maxValue": "3"},
    "parameterSpec.categoricalValueSpec": {"values": ["a", "b"]},
    "parameterSpec.discreteValueSpec": {"values": [1.0, 2.0]},
    "conditionalParameterSpecs.parentDiscreteValues": {"values": [1.0]},
    "conditionalParameterSpecs.parentCategoricalValues": {"values": ["a"]},
    "studyStoppingConfig.minimumRuntimeConstraint": {"maxDuration": "60s"},
    "studyStoppingConfig.maximumRuntimeConstraint": {"maxDuration": "3600s"},
}
#: Valid non-zero values where a field has a format (by path suffix); others get a generic one.
VALUES: dict[str, Any] = {
    "machineSpec.machineType": "n1-standard-8",
    "machineSpec.acceleratorType": "NVIDIA_TESLA_T4",
    "machineSpec.tpuTopology": "2x2",
    "machineSpec.gpuPartitionSize": "1g.10gb",
    "reservationAffinity.key": "compute.googleapis.com/reservation-name",
    "reservationAffinity.reservationAffinityType": "SPECIFIC_RESERVATION",
    "env.name": "SOME_VAR",
    "nfsMounts.path": "/export/data",
    "dnsPeeringConfigs.domain": "corp.example.com.",
    "jobSpec.experimentRun": "projects/p/locations/us-central1/metadataStores/default/contexts/e-run",
    "trialJobSpec.experimentRun": "projects/p/locations/us-central1/metadataStores/default/contexts/e-run",
    "pythonPackageSpec.pythonModule": "trainer.task",
    "pythonPackageSpec.executorImageUri": "europe-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest",
    "pythonPackageSpec.packageUris": ["gs://bkt/trainer-0.1.tar.gz"],
    "jobSpec.serviceAccount": "trainer@p.iam.gserviceaccount.com",
    "trialJobSpec.serviceAccount": "trainer@p.iam.gserviceaccount.com",
    "jobSpec.network": "projects/123/global/networks/vpc",
    "trialJobSpec.network": "projects/123/global/networks/vpc",
    "reservedIpRanges": ["range-a"],
    "jobSpec.tensorboard": "projects/p/locations/us-central1/tensorboards/1",
    "trialJobSpec.tensorboard": "projects/p/locations/us-central1/tensorboards/1",
    "jobSpec.experiment": "projects/p/locations/us-central1/metadataStores/default/contexts/e",
    "trialJobSpec.experiment": "projects/p/locations/us-central1/metadataStores/default/contexts/e",
    "jobSpec.models": ["projects/p/locations/us-central1/models/m"],
    "trialJobSpec.models": ["projects/p/locations/us-central1/models/m"],
    "persistentResourceId": "my-pool",
    "protectedArtifactLocationId": "us-central1",
    "pscInterfaceConfig.networkAttachment": "projects/p/regions/us-central1/networkAttachments/a",
    "outputUriPrefix": "gs://bkt/out",
    "kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k",
    "labels": {"team": "ml"},
    "diskSpec.bootDiskType": "pd-standard",
    "diskSpec.bootDiskSizeGb": 200,
    "replicaCount": "1",
    "scheduling.timeout": "3600s",
    "scheduling.strategy": "SPOT",
    "doubleValueSpec.minValue": -1.0,
    "doubleValueSpec.maxValue": 2.0,
    "integerValueSpec.minValue": "-2",
    "integerValueSpec.maxValue": "5",
    "discreteValueSpec.values": [1.0, 2.0],
    "parentIntValues.values": ["1"],
    "parentDiscreteValues.values": [1.0],
    "parentCategoricalValues.values": ["a"],
    "categoricalValueSpec.values": ["a", "b"],
    "parameters.scaleType": "UNIT_LINEAR_SCALE",
    "parameterSpec.scaleType": "UNIT_LINEAR_SCALE",
    "parameters.parameterId": "y",
    "parameterSpec.parameterId": "child",
    "metrics.metricId": "loss",
    "studySpec.algorithm": "RANDOM_SEARCH",
    "convexAutomatedStoppingSpec.learningRateParameterName": "x",
    "convexAutomatedStoppingSpec.minStepCount": "1",
    "convexAutomatedStoppingSpec.maxStepCount": "10",
    "maxTrialCount": 3,
    "parallelTrialCount": 2,
    "maxFailedTrialCount": 1,
    "displayName": "conformance-2",
}
#: Companions a non-zero value needs (by path suffix), set with it.
COMPANIONS: dict[str, dict[str, Any]] = {
    "machineSpec.acceleratorType": {"acceleratorCount": 1},
    "machineSpec.acceleratorCount": {"acceleratorType": "NVIDIA_TESLA_T4"},
    "machineSpec.gpuPartitionSize": {
        "machineType": "a2-ultragpu-1g",
        "acceleratorType": "NVIDIA_A100_80GB",
        "acceleratorCount": 1,
    },
    "machineSpec.tpuTopology": {
        "machineType": "ct5lp-hightpu-4t",
        "acceleratorType": "TPU_V5_LITEPOD",
        "acceleratorCount": 4,
    },
    "jobSpec.reservedIpRanges": {"network": "projects/123/global/networks/vpc"},
    "trialJobSpec.reservedIpRanges": {"network": "projects/123/global/networks/vpc"},
    "jobSpec.experimentRun": {
        "experiment": "projects/p/locations/us-central1/metadataStores/default/contexts/e"
    },
    "trialJobSpec.experimentRun": {
        "experiment": "projects/p/locations/us-central1/metadataStores/default/contexts/e"
    },
}

#: Documented rules that refuse a value: (path suffix, "zero" | "nonzero") -> source. A "Required."
#: non-numeric field at its zero needs no entry (see the module docstring).
_DEFAULT_VALUE = (
    'StudySpec.ParameterSpec.*ValueSpec.default_value: "Currently only supported by the Vertex AI '
    'Vizier service. Not supported by HyperparameterTuningJob or TrainingPipeline."'
)
_SPECIFIC = (
    'ReservationAffinity.key/values: "To target a SPECIFIC_RESERVATION by name, use '
    "compute.googleapis.com/reservation-name as the key and specify the name of your reservation "
    "as its value.\" (the base request's affinity is SPECIFIC_RESERVATION)"
)
RULES: dict[tuple[str, str], str] = {
    **{
        (f"{kind}ValueSpec.defaultValue", which): _DEFAULT_VALUE
        for kind in ("double", "integer", "categorical", "discrete")
        for which in ("zero", "nonzero")
    },
    ("reservationAffinity.key", "zero"): _SPECIFIC,
    ("reservationAffinity.values", "zero"): _SPECIFIC,
    # MachineSpec.machine_type: "as part of WorkerPoolSpec this field is required."
    (
        "workerPoolSpecs.machineSpec.machineType",
        "zero",
    ): "MachineSpec.machine_type: required in a WorkerPoolSpec",
    # Distributed training: "Use the first worker pool specification only for your primary replica,
    # and set its replicaCount to 1" (the base request has pool 0 only).
    ("workerPoolSpecs.replicaCount", "zero"): "worker pool 0: replicaCount must be 1",
    # HyperparameterTuningJob.max_trial_count / parallel_trial_count: "Required. The desired total
    # number of Trials." / "Required. The desired number of Trials to run in parallel." A count of 0
    # trials is no study: the one Required number whose zero is refused.
    # "Run custom training jobs on a persistent resource": the job names a resource that exists and
    # is RUNNING (the request names none here); a tuning job's trial job is not checked at Create.
    (
        "jobSpec.persistentResourceId",
        "nonzero",
    ): "persistent_resource_id: the resource must exist and be RUNNING",
    ("maxTrialCount", "zero"): "max_trial_count: Required, at least 1",
    ("parallelTrialCount", "zero"): "parallel_trial_count: Required, at least 1",
    # Google's tuning page ("Create a hyperparameter tuning job"): "[the service] doesn't support
    # hyperparameter tuning jobs that require TPUs" (a topology comes with a TPU machine type).
    (
        "trialJobSpec.workerPoolSpecs.machineSpec.tpuTopology",
        "nonzero",
    ): "a tuning job's trial job on TPUs: not supported",
}


def _suffix_match(path: str, table: dict[str, Any]) -> Any:
    """The entry of ``table`` whose key is the longest dotted suffix of ``path``, else None."""
    parts = path.split(".")
    for start in range(1, len(parts)):
        key = ".".join(parts[start:])
        if key in table:
            return table[key]
    return None


def _required(field: ProtoField) -> bool:
    return field_doc(field).startswith("Required.")


def output_only(field: ProtoField, fields: dict[str, ProtoField]) -> bool:
    parts = field.path.split(".")
    for end in range(2, len(parts) + 1):
        ancestor = fields.get(".".join(parts[:end]))
        if ancestor is not None and field_doc(ancestor).startswith("Output only."):
            return True
    return False


def _zero(field: ProtoField) -> Any:
    if field.repeated:
        return []
    return {
        "bool": False,
        "string": "",
        "enum": field.enum_values[0] if field.enum_values else 0,
        "map": {},
        "duration": "0s",
        "timestamp": "1970-01-01T00:00:00Z",
        "value": None,
        "any": {"@type": "type.googleapis.com/google.protobuf.Empty"},
    }.get(field.kind, 0)


def _nonzero(field: ProtoField) -> Any:
    chosen = _suffix_match(field.path, VALUES)
    if chosen is not None:
        return chosen
    one: Any = {
        "bool": True,
        "string": "x",
        "enum": field.enum_values[1] if len(field.enum_values) > 1 else 0,
        "map": {"k": "v"},
        "duration": "30s",
        "timestamp": "2030-01-01T00:00:00Z",
        "value": 1.5,
        "any": {"@type": "type.googleapis.com/google.protobuf.Empty"},
        "double": 0.5,
        "float": 0.5,
    }.get(field.kind, 1)
    if field.kind in ("int64", "uint64", "sint64"):
        one = "1"
    return [one] if field.repeated else one


_PARENT_SPECS = {
    "parentIntValues": ("integerValueSpec", {"minValue": "0", "maxValue": "3"}),
    "parentDiscreteValues": ("discreteValueSpec", {"values": [1.0, 2.0]}),
    "parentCategoricalValues": ("categoricalValueSpec", {"values": ["a", "b"]}),
}
_VALUE_SPECS = ("doubleValueSpec", "integerValueSpec", "categoricalValueSpec", "discreteValueSpec")


def _match_parents(param: dict[str, Any]) -> None:
    """Give a parameter with conditional children the value kind its children's condition matches."""
    for child in param.get("conditionalParameterSpecs", []):
        for key, (spec_name, spec) in _PARENT_SPECS.items():
            if key in child and spec_name not in param:
                for other in _VALUE_SPECS:
                    param.pop(other, None)
                param[spec_name] = copy.deepcopy(spec)
        if isinstance(child.get("parameterSpec"), dict):
            _match_parents(child["parameterSpec"])


def build(field: ProtoField, which: str, fields: dict[str, ProtoField]) -> dict[str, Any]:
    """BASE with ``field`` set to its zero (``which="zero"``) or a valid non-zero value."""
    root = field.path.split(".")[0]
    body = copy.deepcopy(BASE[root])
    node: dict[str, Any] = body
    prefix = root
    for name in field.parts[:-1]:
        prefix = f"{prefix}.{name}"
        info = fields[prefix]
        for sibling in info.oneof_siblings:
            node.pop(sibling, None)
        context = _suffix_match(prefix, CONTEXT)
        fresh = copy.deepcopy(context) if context is not None else {}
        if info.repeated:
            items = node.setdefault(name, [])
            if not items:
                items.append(fresh)
            node = items[0]
        else:
            node = node.setdefault(name, fresh)
    for sibling in field.oneof_siblings:
        node.pop(sibling, None)
    if which == "nonzero":
        node.update(copy.deepcopy(_suffix_match(field.path, COMPANIONS) or {}))
        node[field.parts[-1]] = _nonzero(field)
    else:
        node[field.parts[-1]] = _zero(field)
    if root == "HyperparameterTuningJob":
        for param in body["studySpec"].get("parameters", []):
            _match_parents(param)
    return body


def expected(field: ProtoField, which: str, fields: dict[str, ProtoField]) -> str | None:
    """None when the request must be accepted, else the documented rule that refuses it."""
    if output_only(field, fields):
        return None  # output-only: ignored on Create, as the service does
    rule = _suffix_match(field.path, {k[0]: v for k, v in RULES.items() if k[1] == which})
    if rule is not None:
        return str(rule)
    numeric = field.kind in ("double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64")
    if which == "zero" and _required(field) and (field.repeated or not numeric):
        return f"{field.path}: the proto reference marks it Required (zero is unset on the wire)"
    return None


def cases() -> list[tuple[ProtoField, str, dict[str, ProtoField]]]:
    out = []
    for root in ROOTS:
        fields = {f.path: f for f in walk(root)}
        for field in fields.values():
            if field.is_leaf:
                out.extend((field, which, fields) for which in ("zero", "nonzero"))
    return out
