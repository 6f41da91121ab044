"""The differential corpus's hand cases for custom jobs: worker-pool layouts, good and bad, written as v1
JSON, each with the verdict Google's documentation gives (``"ok"`` / ``"bad"``). ``differential_corpus.py``
makes them ``Case`` rows."""

from __future__ import annotations

from typing import Any

from tests.differential_v1 import (
    A100,
    DAY,
    EXEC,
    FLEX_START,
    IMG,
    RS,
    T4,
    V100X8,
    custom,
    machine,
    package,
    pool,
    reducers,
)

__all__ = ["CUSTOM_CASES"]


RESERVED_A100 = {**A100, "reservationAffinity": {"reservationAffinityType": "ANY_RESERVATION"}}
NOT_RESERVED_A100 = {**A100, "reservationAffinity": {"reservationAffinityType": "NO_RESERVATION"}}
SPECIFIC_A100 = {
    **A100,
    "reservationAffinity": {
        "reservationAffinityType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/p/zones/us-central1-a/reservations/r"],
    },
}
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

CUSTOM_CASES: list[tuple[str, str, dict[str, Any]]] = [
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
    ("good-labels-63", "ok", custom(labels={"k" * 63: "v" * 63, "team": ""})),
    ("good-labels-127-bytes", "ok", custom(labels={"日" * 42: "é" * 63})),
    ("good-label-key-digit", "ok", custom(labels={"9lives": "v"})),  # "start with a letter or number"
    ("good-labels-international", "ok", custom(labels={"équipe": "données", "機械": "学習"})),
    ("good-display-name-128", "ok", custom(name="x" * 128)),
    ("good-display-name-unicode", "ok", custom(name="训练 job ✓")),
    ("good-display-name-spaces", "ok", custom(name="   ")),  # "can consist of any UTF-8 characters"
    (
        "good-flex-start-a100",
        "ok",
        custom(pool(A100), pool(A100, 3), scheduling={**FLEX_START, "timeout": f"{7 * DAY}s"}),
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
    ("bad-flex-cpu", "bad", custom(scheduling=FLEX_START)),
    (
        "bad-flex-mixed-pools",
        "bad",
        custom(pool(A100), {}, pool(machine("n1-highmem-8")), scheduling=FLEX_START),
    ),
    ("bad-flex-t4", "bad", custom(pool(T4), scheduling=FLEX_START)),
    (
        "bad-flex-timeout-8-days",
        "bad",
        custom(pool(A100), scheduling={**FLEX_START, "timeout": f"{8 * DAY}s"}),
    ),
    ("bad-executor-docker-hub", "bad", custom(pool(**package("python:3.11")))),
    (
        "bad-executor-other-repository",
        "bad",
        custom(pool(**package("us-docker.pkg.dev/my-proj/training/x:1"))),
    ),
    ("bad-label-key-65", "bad", custom(labels={"k" * 65: "v"})),
    ("bad-label-key-64", "bad", custom(labels={"k" * 64: "v"})),  # "less than 64 characters"
    ("bad-label-value-64", "bad", custom(labels={"team": "v" * 64})),
    ("bad-label-value-128-bytes", "bad", custom(labels={"team": "日" * 43})),  # "less that 128 bytes"
    ("bad-label-key-128-bytes", "bad", custom(labels={"日" * 43: "v"})),
    ("bad-label-key-underscore", "bad", custom(labels={"_team": "v"})),
    ("bad-label-value-upper", "bad", custom(labels={"team": "ML"})),
    ("bad-labels-65", "bad", custom(labels={f"k{i}": "v" for i in range(65)})),
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
    ("good-standard-any-reservation", "ok", custom(pool(RESERVED_A100))),
    ("good-flex-no-reservation", "ok", custom(pool(NOT_RESERVED_A100), scheduling=FLEX_START)),
    ("good-spot-no-reservation", "ok", custom(pool(NOT_RESERVED_A100), scheduling={"strategy": "SPOT"})),
    ("bad-flex-any-reservation", "bad", custom(pool(RESERVED_A100), scheduling=FLEX_START)),
    ("bad-spot-any-reservation", "bad", custom(pool(RESERVED_A100), scheduling={"strategy": "SPOT"})),
    (
        "bad-flex-specific-reservation",
        "bad",
        custom(pool(SPECIFIC_A100), pool(SPECIFIC_A100, 2), scheduling=FLEX_START),
    ),
    (
        "bad-reservation-no-key",
        "bad",
        custom(
            pool({**machine(), "reservationAffinity": {"reservationAffinityType": "SPECIFIC_RESERVATION"}})
        ),
    ),  # fmt: skip
    # -- TPUs and the machine list of Google's "Configure compute resources" page (catalog/*_page.json)
    (
        "good-tpu-v6e-single-host",
        "ok",
        custom(pool({"machineType": "ct6e-standard-8t", "tpuTopology": "2x4"})),
    ),
    ("good-tpu-v6e-sub-host", "ok", custom(pool({"machineType": "ct6e-standard-1t", "tpuTopology": "1x1"}))),
    ("good-tpu-v5e-2x2", "ok", custom(pool({"machineType": "ct5lp-hightpu-4t", "tpuTopology": "2x2"}))),
    ("good-tpu-v6e-no-topology", "ok", custom(pool(machine("ct6e-standard-4t")))),
    ("bad-tpu-v6e-topology", "bad", custom(pool({"machineType": "ct6e-standard-8t", "tpuTopology": "4x4"}))),
    (
        "good-tpu-v6e-2x4-on-two-vms",
        "ok",
        custom(pool({"machineType": "ct6e-standard-4t", "tpuTopology": "2x4"})),
    ),  # the page's v6e table lists it (the TPU page's note keeps it for the GKE API)
    (
        "good-tpu-v5e-multi-host",
        "ok",
        custom(pool({"machineType": "ct5lp-hightpu-4t", "tpuTopology": "16x16"})),
    ),
    ("good-tpu7x", "ok", custom(pool({"machineType": "tpu7x-standard-4t", "tpuTopology": "4x4x8"}))),
    (
        "bad-tpu7x-2d-topology",
        "bad",
        custom(pool({"machineType": "tpu7x-standard-4t", "tpuTopology": "4x4"})),
    ),
    ("bad-tpu-v5e-topology", "bad", custom(pool({"machineType": "ct5lp-hightpu-1t", "tpuTopology": "2x2"}))),
    ("bad-tpu-v6e-accelerator", "bad", custom(pool(machine("ct6e-standard-4t", "TPU_V5_LITEPOD", 4)))),
    ("bad-tpu-v6e-typo", "bad", custom(pool(machine("ct6e-standard-2t")))),
    ("bad-tpu-v5p", "bad", custom(pool(machine("ct5p-hightpu-4t")))),
    ("good-tpu-v2-pod", "ok", custom(pool(machine("cloud-tpu", "TPU_V2", 128)))),
    ("good-tpu-v3-pod", "ok", custom(pool(machine("cloud-tpu", "TPU_V3", 32)))),
    ("bad-tpu-v2-count", "bad", custom(pool(machine("cloud-tpu", "TPU_V2", 16)))),
    (
        "bad-tpu-two-pools",
        "bad",
        custom(pool({"machineType": "tpu7x-standard-4t", "tpuTopology": "2x2x1"}), pool(machine(), 2)),
    ),
    ("good-n4", "ok", custom(pool(machine("n4-highcpu-80")))),
    ("good-g4", "ok", custom(pool(machine("g4-standard-192", "NVIDIA_RTX_PRO_6000", 4)))),
    ("bad-g4-count", "bad", custom(pool(machine("g4-standard-192", "NVIDIA_RTX_PRO_6000", 8)))),
    ("bad-n4-96", "bad", custom(pool(machine("n4-standard-96")))),
    ("bad-t4-x1-on-n1-standard-32", "bad", custom(pool(machine("n1-standard-32", "NVIDIA_TESLA_T4", 1)))),
]
