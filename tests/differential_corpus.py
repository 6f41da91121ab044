"""The differential test's corpus: v1 Create bodies, good and bad, each read by the provider's specs
(``from_api``) and by the emulator's own rules (``vertex_emulator.rules.check_create``).

Two sources:

* every row of the provider's bad-spec table (``tests/specs/bad_job_cases.py``, ``bad_study_cases.py``),
  rendered as the v1 body it stands for (``differential_render``); a row with no v1 form (an enum name
  the protos lack, two pools at one position, ...) is listed in ``NO_V1_FORM`` with the reason;
* ``HAND_CASES`` below: layouts written as v1 JSON, each with the verdict Google's documentation gives
  (``expect``), which the emulator must give.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.differential_render import v1_or_reason
from tests.specs.bad_job_cases import JOB_CASES
from tests.specs.bad_study_cases import STUDY_CASES

__all__ = ["CORPUS", "HAND_CASES", "NO_V1_FORM", "Case", "table_cases"]


@dataclass(frozen=True)
class Case:
    case_id: str
    kind: str  # "customJobs" | "hyperparameterTuningJobs"
    body: dict[str, Any]
    location: str = "us-central1"
    #: the verdict Google's documentation gives ("ok" / "bad"); None for a table row (no second reading)
    expect: str | None = None


#: Rows of the bad-spec table with no v1 form, and why (the test checks this list is exact).
NO_V1_FORM: dict[str, str] = {
    "ps-and-reducers": "parameter servers and a Reduction Server both need position 2",
    "task-both": "WorkerPoolSpec.task is a oneof: the wire carries one task",
    "unknown-accelerator": "an AcceleratorType name the protos lack",
    "strategy-unknown": "a Scheduling.Strategy name the protos lack",
    "timeout-garbage": "not a google.protobuf.Duration",
    "unknown-field": "a CustomJobSpec field the protos lack",
    "metric-goal": "a GoalType name the protos lack",
    "parameter-type-missing": "a parameter without a value spec kind puts its bounds where v1 has none",
    "two-stopping-rules": "StudySpec.automated_stopping_spec is a oneof",
    "tuning-location-mismatch": "a v1 request has one location, its parent's",
    "trial-job-labels": "CustomJobSpec has no labels (a tuning job's labels are its own)",
}

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


def _int(pid: str, low: int, high: int, **extra: Any) -> dict[str, Any]:
    return {"parameterId": pid, "integerValueSpec": {"minValue": low, "maxValue": high}, **extra}


def _cat(pid: str, *values: str, **extra: Any) -> dict[str, Any]:
    return {"parameterId": pid, "categoricalValueSpec": {"values": list(values)}, **extra}


def _disc(pid: str, *values: float, **extra: Any) -> dict[str, Any]:
    return {"parameterId": pid, "discreteValueSpec": {"values": list(values)}, **extra}


def _dbl(pid: str, low: float, high: float, **extra: Any) -> dict[str, Any]:
    return {"parameterId": pid, "doubleValueSpec": {"minValue": low, "maxValue": high}, **extra}


def _child(condition: str, values: list[Any], param: dict[str, Any]) -> dict[str, Any]:
    return {condition: {"values": values}, "parameterSpec": param}


_FLEX = {"strategy": "FLEX_START", "maxWaitDuration": "3600s"}
_SEED = custom(pool(V100X8), pool(V100X8, 4), reducers(16))
_RESOURCES = {
    "tensorboard": "projects/p/locations/us-central1/tensorboards/1",
    "experiment": "projects/p/locations/us-central1/metadataStores/default/contexts/exp",
    "experimentRun": "projects/p/locations/us-central1/metadataStores/default/contexts/exp-run1",
    "models": ["projects/p/locations/us-central1/models/m@2"],
    "serviceAccount": "trainer@p.iam.gserviceaccount.com",
    "protectedArtifactLocationId": "europe-west4",
    "pscInterfaceConfig": {
        "dnsPeeringConfigs": [{"domain": "corp.", "targetProject": "p", "targetNetwork": "n"}]
    },
}

_CUSTOM: list[tuple[str, str, dict[str, Any]]] = [
    # -- good layouts
    ("good-one-container", "ok", custom()),
    ("good-four-pools", "ok", custom(pool(), pool(replicas=4), pool(machine("n1-highmem-8"), 2), pool())),
    ("good-primary-and-ps", "ok", custom(pool(), {}, pool(machine("n1-highmem-8"), 2))),
    ("good-trailing-empty-pool", "ok", custom(pool(), {})),
    ("good-seed-reduction-server", "ok", _SEED),
    (
        "good-rs-europe-n2-reducers",
        "ok",
        custom(pool(T4), pool(T4, 3), reducers(2, machine("n2-highcpu-16"), RS.replace("us-", "europe-"))),
    ),
    ("good-package-us", "ok", custom(pool(**package()))),
    ("good-package-europe", "ok", custom(pool(**package(EXEC.replace("us-", "europe-"))))),
    ("good-package-asia-digest", "ok", custom(pool(**package(EXEC.split(":")[0] + "@sha256:" + "a" * 64)))),
    ("good-labels-64", "ok", custom(labels={"k" * 64: "v" * 64, "team": ""})),
    ("good-labels-international", "ok", custom(labels={"équipe": "données", "機械": "学習"})),
    ("good-display-name-128", "ok", custom(name="x" * 128)),
    ("good-display-name-unicode", "ok", custom(name="训练 job ✓")),
    ("good-display-name-spaces", "ok", custom(name="   ")),  # "can consist of any UTF-8 characters"
    (
        "good-flex-start-a100",
        "ok",
        custom(pool(A100), pool(A100, 3), scheduling={**_FLEX, "timeout": f"{7 * DAY}s"}),
    ),
    ("good-spot", "ok", custom(scheduling={"strategy": "SPOT"})),
    ("good-low-cost-deprecated", "ok", custom(scheduling={"strategy": "LOW_COST"})),
    ("good-max-wait-standard", "ok", custom(scheduling={"strategy": "STANDARD", "maxWaitDuration": "600s"})),
    ("good-timeout-zero", "ok", custom(scheduling={"timeout": "0s"})),
    ("good-persistent-resource", "ok", custom(persistentResourceId="my-pool-1")),
    (
        "good-network-ranges",
        "ok",
        custom(network="projects/123/global/networks/vpc", reservedIpRanges=["r1"]),
    ),
    (
        "good-kms-same-region",
        "ok",
        {
            **custom(),
            "encryptionSpec": {"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"},
        },
    ),  # fmt: skip
    ("good-resources", "ok", custom(**_RESOURCES)),
    (
        "good-nfs",
        "ok",
        custom(
            pool(**{"containerSpec": {"imageUri": IMG}})
            | {"nfsMounts": [{"server": "10.0.0.2", "path": "/export", "mountPoint": "data"}]}
        ),
    ),  # fmt: skip
    ("good-env", "ok", custom(pool(containerSpec={"imageUri": IMG, "env": [{"name": "A_1", "value": "x"}]}))),
    # -- bad layouts
    ("bad-five-pools", "bad", custom(pool(), pool(), pool(), pool(), pool())),
    ("bad-pool-0-empty", "bad", custom({}, pool())),
    ("bad-no-pools", "bad", {"displayName": "job", "jobSpec": {"workerPoolSpecs": []}}),
    ("bad-primary-count-omitted", "bad", custom(pool(replicas=None))),
    ("bad-workers-count-omitted", "bad", custom(pool(), pool(replicas=None))),
    ("bad-pool-without-task", "bad", custom(pool(), {"machineSpec": machine(), "replicaCount": 1})),
    ("bad-rs-image-in-evaluators", "bad", custom(pool(T4), pool(T4, 2), {}, reducers(2))),
    ("bad-rs-reducers-with-gpu", "bad", custom(pool(T4), pool(T4, 2), reducers(2, T4))),
    ("bad-rs-cpu-workers", "bad", custom(pool(), pool(replicas=2), reducers(2))),
    ("bad-flex-cpu", "bad", custom(scheduling=_FLEX)),
    ("bad-flex-mixed-pools", "bad", custom(pool(A100), {}, pool(machine("n1-highmem-8")), scheduling=_FLEX)),
    ("bad-flex-t4", "bad", custom(pool(T4), scheduling=_FLEX)),
    ("bad-flex-timeout-8-days", "bad", custom(pool(A100), scheduling={**_FLEX, "timeout": f"{8 * DAY}s"})),
    ("bad-executor-docker-hub", "bad", custom(pool(**package("python:3.11")))),
    (
        "bad-executor-other-repository",
        "bad",
        custom(pool(**package("us-docker.pkg.dev/my-proj/training/x:1"))),
    ),
    ("bad-label-key-65", "bad", custom(labels={"k" * 65: "v"})),
    ("bad-label-value-upper", "bad", custom(labels={"team": "ML"})),
    ("bad-labels-65", "bad", custom(labels={f"k{i}": "v" for i in range(65)})),
    ("bad-label-key-digit", "bad", custom(labels={"9lives": "v"})),
    ("bad-display-name-129", "bad", custom(name="x" * 129)),
    ("bad-display-name-empty", "bad", custom(name="")),
    (
        "bad-kms-other-region",
        "bad",
        {
            **custom(),
            "encryptionSpec": {"kmsKeyName": "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"},
        },
    ),  # fmt: skip
    ("bad-network-project-id", "bad", custom(network="projects/my-project/global/networks/vpc")),
    ("bad-persistent-id-dash", "bad", custom(persistentResourceId="pool-")),
    ("bad-model-name", "bad", custom(models=["models/m"])),
    (
        "bad-dns-domain-no-dot",
        "bad",
        custom(
            pscInterfaceConfig={
                "dnsPeeringConfigs": [{"domain": "corp", "targetProject": "p", "targetNetwork": "n"}]
            }
        ),
    ),  # fmt: skip
    ("bad-timeout-negative", "bad", custom(scheduling={"timeout": "-60s"})),
    ("bad-max-wait-negative", "bad", custom(scheduling={"strategy": "FLEX_START", "maxWaitDuration": "-1s"})),
    (
        "bad-env-name",
        "bad",
        custom(pool(containerSpec={"imageUri": IMG, "env": [{"name": "A-B", "value": "x"}]})),
    ),
    (
        "bad-env-apostrophe",
        "bad",
        custom(pool(containerSpec={"imageUri": IMG, "env": [{"name": "A", "value": "it's"}]})),
    ),
    (
        "bad-env-101",
        "bad",
        custom(
            pool(
                containerSpec={"imageUri": IMG, "env": [{"name": f"V{i}", "value": "x"} for i in range(101)]}
            )
        ),
    ),  # fmt: skip
    (
        "bad-package-uris-101",
        "bad",
        custom(
            pool(
                pythonPackageSpec={
                    "executorImageUri": EXEC,
                    "packageUris": [f"gs://b/p{i}.tar.gz" for i in range(101)],
                    "pythonModule": "trainer.task",
                }
            )
        ),
    ),  # fmt: skip
    (
        "bad-package-module",
        "bad",
        custom(
            pool(**package())
            | {
                "pythonPackageSpec": {
                    "executorImageUri": EXEC,
                    "packageUris": ["gs://b/t.tar.gz"],
                    "pythonModule": "trainer/task.py",
                }
            }
        ),
    ),  # fmt: skip
    (
        "bad-package-uri-local",
        "bad",
        custom(pool(pythonPackageSpec={**package()["pythonPackageSpec"], "packageUris": ["dist/t.tar.gz"]})),
    ),
    (
        "bad-nul-in-args",
        "bad",
        custom(pool(containerSpec={"imageUri": IMG, "command": ["python"], "args": ["--name=a\x00b"]})),
    ),
    (
        "bad-nfs-relative",
        "bad",
        custom(pool() | {"nfsMounts": [{"server": "s", "path": "x", "mountPoint": "m"}]}),
    ),
    (
        "bad-reservation-no-key",
        "bad",
        custom(
            pool({**machine(), "reservationAffinity": {"reservationAffinityType": "SPECIFIC_RESERVATION"}})
        ),
    ),  # fmt: skip
]

_TUNING: list[tuple[str, str, dict[str, Any]]] = [
    ("good-study-int-one-value", "ok", tuning([_int("n", 3, 3)])),
    ("good-study-double-one-value", "ok", tuning([_dbl("lr", 0.5, 0.5)])),
    (
        "good-study-two-metrics",
        "ok",
        tuning(
            metrics=[{"metricId": "acc", "goal": "MAXIMIZE"}, {"metricId": "latency", "goal": "MINIMIZE"}]
        ),
    ),  # fmt: skip
    (
        "good-study-safety-and-objective",
        "ok",
        tuning(
            metrics=[
                {"metricId": "acc", "goal": "MAXIMIZE"},
                {"metricId": "loss_ok", "goal": "MAXIMIZE", "safetyConfig": {"safetyThreshold": 0.1}},
            ]
        ),
    ),  # fmt: skip
    (
        "good-study-grid",
        "ok",
        tuning(
            [_int("n", 1, 3), _cat("opt", "adam", "sgd"), _disc("d", 0.1, 0.2)],
            study={"algorithm": "GRID_SEARCH"},
        ),
    ),  # fmt: skip
    (
        "good-study-conditional",
        "ok",
        tuning(
            [
                _cat(
                    "opt",
                    "adam",
                    "sgd",
                    conditionalParameterSpecs=[
                        _child("parentCategoricalValues", ["sgd"], _dbl("momentum", 0, 0.9)),
                        _child("parentCategoricalValues", ["adam"], _dbl("beta", 0.8, 0.99)),
                        _child("parentCategoricalValues", ["adam"], _int("warmup", 0, 10)),
                    ],
                )
            ]
        ),
    ),  # fmt: skip
    (
        "good-study-same-child-disjoint",
        "ok",
        tuning(
            [
                _int(
                    "layers",
                    1,
                    4,
                    conditionalParameterSpecs=[
                        _child("parentIntValues", [1, 2], _int("units", 8, 64)),
                        _child("parentIntValues", [3, 4], _int("units", 64, 512)),
                    ],
                )
            ]
        ),
    ),  # fmt: skip
    ("good-study-discrete-1000", "ok", tuning([_disc("d", *range(1000))])),
    ("good-study-log-scale", "ok", tuning([_dbl("lr", 1e-4, 1e-1, scaleType="UNIT_LOG_SCALE")])),
    ("good-study-failed-zero", "ok", tuning(maxFailedTrialCount=0)),
    (
        "good-study-trial-flex",
        "ok",
        tuning(trialJobSpec={"workerPoolSpecs": [pool(A100)], "scheduling": _FLEX}),
    ),
    (
        "bad-study-safety-only",
        "bad",
        tuning(
            metrics=[{"metricId": "loss_ok", "goal": "MAXIMIZE", "safetyConfig": {"safetyThreshold": 0.1}}]
        ),
    ),  # fmt: skip
    ("bad-study-log-discrete-zero", "bad", tuning([_disc("d", 0, 1, scaleType="UNIT_LOG_SCALE")])),
    ("bad-study-categorical-repeat", "bad", tuning([_cat("c", "a", "a")])),
    (
        "bad-study-child-not-in-discrete",
        "bad",
        tuning(
            [
                _disc(
                    "d",
                    1,
                    2,
                    conditionalParameterSpecs=[_child("parentDiscreteValues", [3], _int("n", 1, 2))],
                )
            ]
        ),
    ),  # fmt: skip
    (
        "bad-study-grid-double-child",
        "bad",
        tuning(
            [
                _cat(
                    "opt",
                    "a",
                    conditionalParameterSpecs=[
                        _child("parentCategoricalValues", ["a"], _dbl("lr", 0.1, 0.2))
                    ],
                )
            ],
            study={"algorithm": "GRID_SEARCH"},
        ),
    ),  # fmt: skip
    ("bad-study-parallel-zero", "bad", tuning(parallelTrialCount=0)),
    ("bad-study-max-omitted", "bad", {k: v for k, v in tuning().items() if k != "maxTrialCount"}),
    (
        "bad-study-default-value",
        "bad",
        tuning([{"parameterId": "n", "integerValueSpec": {"minValue": 1, "maxValue": 3, "defaultValue": 2}}]),
    ),  # fmt: skip
    ("bad-study-no-value-spec", "bad", tuning([{"parameterId": "n"}])),
    ("bad-study-int-reversed", "bad", tuning([_int("n", 5, 2)])),
    (
        "bad-study-child-repeats-top-id",
        "bad",
        tuning(
            [
                _cat(
                    "opt",
                    "a",
                    conditionalParameterSpecs=[_child("parentCategoricalValues", ["a"], _int("opt", 1, 2))],
                )
            ]
        ),
    ),  # fmt: skip
    ("bad-study-categorical-scale", "bad", tuning([_cat("c", "a", scaleType="UNIT_LINEAR_SCALE")])),
    ("bad-study-discrete-1001", "bad", tuning([_disc("d", *range(1001))])),
    (
        "bad-study-trial-flex-cpu",
        "bad",
        tuning(trialJobSpec={"workerPoolSpecs": [pool()], "scheduling": _FLEX}),
    ),
    ("bad-study-metric-id-space", "bad", tuning(metrics=[{"metricId": "my acc", "goal": "MAXIMIZE"}])),
]

HAND_CASES: list[Case] = [
    *(Case(cid, "customJobs", body, expect=expect) for cid, expect, body in _CUSTOM),
    *(Case(cid, "hyperparameterTuningJobs", body, expect=expect) for cid, expect, body in _TUNING),
    Case("bad-location-unknown", "customJobs", custom(), location="mars-central1", expect="bad"),
    Case("good-location-europe", "customJobs", custom(), location="europe-west4", expect="ok"),
]


def table_cases() -> tuple[list[Case], dict[str, str]]:
    """Every row of the bad-spec table as a ``Case``, and the rows with no v1 form (id -> why)."""
    cases: list[Case] = []
    skipped: dict[str, str] = {}
    for case_id, data, _path, _rule in [*JOB_CASES, *STUDY_CASES]:
        rendered = v1_or_reason(data)
        if isinstance(rendered, str):
            skipped[f"table:{case_id}"] = rendered
            continue
        kind, body, location = rendered
        cases.append(Case(f"table:{case_id}", kind, body, location))
    return cases, skipped


CORPUS: list[Case] = [*table_cases()[0], *HAND_CASES]
