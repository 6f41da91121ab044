"""The bad-spec table's training-job rows (`test_bad_specs.py` runs them), with the valid bases the rows
edit: each row is (case id, spec dict, expected field path, expected rule text)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = [
    "AT",
    "CPU",
    "EXEC_IMG",
    "IMG",
    "JOB_CASES",
    "PARAM",
    "RS",
    "RS_IMG",
    "T4",
    "Case",
    "J",
    "T",
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

JOB_CASES: list[Case] = [
    # -- pools and positions
    ("primary-2-replicas", J(("primary.replica_count", 2)), "primary.replica_count", "exactly 1 replica"),
    ("primary-missing", J(("primary", ...)), "primary", "Field required"),
    (
        "ps-and-reducers",
        J(("parameter_servers", {"machine": CPU, "container": {"image_uri": IMG}}), ("reduction_server", RS)),
        "parameter_servers/reduction_server",
        "never both",
    ),
    (
        "task-both",
        J(
            (
                "primary.python_package",
                {
                    "executor_image_uri": EXEC_IMG,
                    "package_uris": ["gs://b/p.tar.gz"],
                    "python_module": "t.task",
                },
            )
        ),
        "primary.container/python_package",
        "exactly one of container or python_package is required (got both)",
    ),
    ("task-neither", J(("workers.container", ...)), "workers.container/python_package", "(got neither)"),
    (
        "env-empty-value",
        J(("primary.container.env", {"A": ""})),
        "primary.container.env",
        "A: the value is required",
    ),
    (
        "pool-zero-replicas",
        J(("workers.replica_count", 0)),
        "workers.replica_count",
        "a worker pool in use needs at least 1 replica (got 0",
    ),
    (
        "rs-image-in-workers",
        J(("workers.container.image_uri", RS_IMG)),
        "workers.container.image_uri",
        "runs only in worker pool 2",
    ),
    # -- Reduction Server
    (
        "rs-accelerators",
        J(("reduction_server", {"accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": 1})),
        "reduction_server",
        "reducers must not have accelerators (got NVIDIA_TESLA_T4 x1)",
    ),
    (
        "rs-args",
        J(("reduction_server", {"args": ["--x"]})),
        "reduction_server",
        "takes no command, args or env",
    ),
    (
        "rs-gpu-machine",
        J(("reduction_server", {"machine_type": "a2-highgpu-1g"})),
        "reduction_server.machine_type",
        "reducers must not have accelerators",
    ),
    (
        "rs-cpu-primary",
        J(("primary.machine", CPU), ("workers", ...), ("reduction_server", RS)),
        "reduction_server",
        "needs GPU primary",
    ),
    (
        "rs-cpu-says-what-to-do",
        J(("primary.machine", CPU), ("workers", ...), ("reduction_server", RS)),
        "reduction_server",
        "add GPUs to the primary and the workers (machine.accelerator_type and accelerator_count), or "
        "for CPU training drop reduction_server and use parameter_servers instead",
    ),
    (
        "rs-cpu-workers",
        J(("workers.machine", CPU), ("reduction_server", RS)),
        "reduction_server",
        "needs GPU workers",
    ),
    (
        "rs-tpu",
        J(
            (
                "primary.machine",
                {"machine_type": "cloud-tpu", "accelerator_type": "TPU_V3", "accelerator_count": 8},
            ),
            ("workers", ...),
            ("reduction_server", RS),
        ),
        "reduction_server",
        "not for TPU jobs",
    ),
    (
        "rs-undersized",
        J(("reduction_server", {"replica_count": 8})),
        "reduction_server.replica_count",
        "8 x n1-highcpu-16 give 256 Gbps, below the 500 Gbps of worker pools 0 and 1; use 16 or more",
    ),
    (
        "rs-auto-unknown-bandwidth",
        J(("reduction_server", {"machine_type": "m1-megamem-96"})),
        "reduction_server.replica_count",
        "'auto' cannot size the reducers",
    ),
    (
        "rs-bad-image",
        J(("reduction_server", {"image_uri": IMG})),
        "reduction_server.image_uri",
        "must be a Reduction Server image",
    ),
    (
        "rs-zero",
        J(("reduction_server", {"replica_count": 0})),
        "reduction_server.replica_count",
        "at least 1",
    ),
    # -- machines
    (
        "count-without-type",
        J(("primary.machine", {"machine_type": "n1-standard-4", "accelerator_count": 2})),
        "primary.machine.accelerator_count",
        "set accelerator_type too",
    ),
    (
        "type-without-count",
        J(("primary.machine.accelerator_count", 0)),
        "primary.machine.accelerator_count",
        "must be at least 1 when accelerator_type is NVIDIA_TESLA_V100",
    ),
    (
        "gpu-count-3",
        J(("primary.machine.accelerator_count", 3)),
        "primary.machine.accelerator_count",
        "n1-highmem-96 takes NVIDIA_TESLA_V100 x8 (got x3)",
    ),
    (
        "gpu-count-for-machine",
        J(("primary.machine", T4(1, machine_type="n1-standard-96"))),
        "primary.machine.accelerator_count",
        "n1-standard-96 takes NVIDIA_TESLA_T4 x4 (got x1)",
    ),
    # -- the machine catalog (airflow_vertex_dist.specs.catalog)
    (
        "machine-type-misspelt",
        J(("primary.machine", {"machine_type": "n1-standrad-4"})),
        "primary.machine.machine_type",
        "'n1-standrad-4' is not a machine type of Vertex AI custom training (did you mean n1-standard-4?)",
    ),
    (
        "machine-type-unknown",
        J(("primary.machine", {"machine_type": "n1-foo-7"})),
        "primary.machine.machine_type",
        "'n1-foo-7' is not a machine type of Vertex AI custom training",
    ),
    (
        "a100-80gb-on-n1",
        J(("primary.machine", {"machine_type": "n1-standard-4", **GPU("NVIDIA_A100_80GB", 1)})),
        "primary.machine.accelerator_type",
        "n1-standard-4 does not take NVIDIA_A100_80GB (it takes NVIDIA_TESLA_P100, NVIDIA_TESLA_P4, "
        "NVIDIA_TESLA_T4, NVIDIA_TESLA_V100)",
    ),
    (
        "t4-on-e2",
        J(("workers.machine", T4(1, machine_type="e2-standard-4"))),
        "workers.machine.accelerator_type",
        "e2-standard-4 takes no accelerators (got NVIDIA_TESLA_T4 x1)",
    ),
    (
        "k80-anywhere",
        J(("primary.machine", {"machine_type": "n1-standard-4", **GPU("NVIDIA_TESLA_K80", 1)})),
        "primary.machine.accelerator_type",
        "NVIDIA_TESLA_K80 is past its end of support",
    ),
    (
        "a2-without-its-gpus",
        J(("primary.machine", {"machine_type": "a2-highgpu-1g"})),
        "primary.machine.accelerator_type",
        "a2-highgpu-1g comes with 1 x NVIDIA_TESLA_A100, which the request names (got none)",
    ),
    (
        "a2-other-count",
        J(("primary.machine", {"machine_type": "a2-highgpu-1g", **GPU("NVIDIA_TESLA_A100", 2)})),
        "primary.machine.accelerator_count",
        "a2-highgpu-1g comes with 1 x NVIDIA_TESLA_A100 (got x2)",
    ),
    (
        "g2-other-gpu",
        J(("primary.machine", T4(1, machine_type="g2-standard-8"))),
        "primary.machine.accelerator_type",
        "g2-standard-8 comes with 1 x NVIDIA_L4 (got NVIDIA_TESLA_T4 x1)",
    ),
    (
        "cloud-tpu-without-tpus",
        J(("primary.machine", {"machine_type": "cloud-tpu"}), ("workers", ...)),
        "primary.machine.accelerator_type",
        "cloud-tpu runs TPU_V2 or TPU_V3 x8 (got none)",
    ),
    (
        "tpu-vm-chips",
        J(
            ("primary.machine", {"machine_type": "ct5lp-hightpu-4t", **GPU("TPU_V5_LITEPOD", 8)}),
            ("workers", ...),
        ),
        "primary.machine.accelerator_count",
        "ct5lp-hightpu-4t has 4 x TPU_V5_LITEPOD (got x8)",
    ),
    (
        "rs-machine-unknown",
        J(("reduction_server", {"machine_type": "n1-highcpu-61"})),
        "reduction_server.machine_type",
        "'n1-highcpu-61' is not a machine type of Vertex AI custom training",
    ),
    (
        "unknown-accelerator",
        J(("primary.machine.accelerator_type", "NVIDIA_TESLA_X")),
        "primary.machine.accelerator_type",
        "Input should be",
    ),
    (
        "tpu-v3-on-n1",
        J(
            (
                "primary.machine",
                {"machine_type": "n1-standard-8", "accelerator_type": "TPU_V3", "accelerator_count": 8},
            )
        ),
        "primary.machine.accelerator_type",
        "runs on machine_type 'cloud-tpu'",
    ),
    (
        "topology-on-gpu",
        J(("primary.machine.tpu_topology", "2x2")),
        "primary.machine.tpu_topology",
        "only for TPU machines",
    ),
    (
        "topology-format",
        J(("primary.machine", {"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2by2"})),
        "primary.machine.tpu_topology",
        "must look like '2x2'",
    ),
    (
        "machine-type-format",
        J(("primary.machine.machine_type", "N1_STANDARD_4")),
        "primary.machine.machine_type",
        "must look like 'n1-standard-4'",
    ),
    (
        "gpu-partition-count",
        J(("primary.machine.gpu_partition_size", "1g.10gb")),
        "primary.machine.gpu_partition_size",
        "needs accelerator_count 1",
    ),
    (
        "reservation-incomplete",
        J(("primary.machine.reservation_affinity", {"reservation_affinity_type": "SPECIFIC_RESERVATION"})),
        "primary.machine.reservation_affinity",
        "needs both key and values",
    ),
    # -- disks, tasks, mounts
    (
        "disk-small",
        J(("primary.disk", {"boot_disk_size_gb": 50})),
        "primary.disk.boot_disk_size_gb",
        "within [100, 64000]",
    ),
    (
        "disk-type",
        J(("primary.disk", {"boot_disk_type": "pd-fast"})),
        "primary.disk.boot_disk_type",
        "'pd-fast' is not a boot disk type of Vertex AI training (did you mean pd-ssd?)",
    ),
    (
        "disk-pd-balanced",
        J(("workers.disk", {"boot_disk_type": "pd-balanced"})),
        "workers.disk.boot_disk_type",
        "'pd-balanced' is not a boot disk type of Vertex AI training",
    ),
    (
        "disk-hyperdisk-on-n1",
        J(("primary.disk", {"boot_disk_type": "hyperdisk-balanced"})),
        "primary.disk.boot_disk_type",
        "n1-highmem-96 does not take boot disk type hyperdisk-balanced (it takes pd-ssd, pd-standard)",
    ),
    (
        "disk-pd-ssd-on-a3-ultra",
        J(
            ("primary.machine", {"machine_type": "a3-ultragpu-8g", **GPU("NVIDIA_H200_141GB", 8)}),
            ("primary.disk", {"boot_disk_type": "pd-ssd"}),
            ("workers", ...),
        ),
        "primary.disk.boot_disk_type",
        "a3-ultragpu-8g does not take boot disk type pd-ssd (it takes hyperdisk-balanced)",
    ),
    (
        "rs-disk-hyperdisk",
        J(("reduction_server", {"disk": {"boot_disk_type": "hyperdisk-balanced"}})),
        "reduction_server.disk.boot_disk_type",
        "n1-highcpu-16 does not take boot disk type hyperdisk-balanced",
    ),
    ("env-name", J(("primary.container.env", {"1BAD": "x"})), "primary.container.env", "C identifier"),
    (
        "image-empty",
        J(("primary.container.image_uri", " ")),
        "primary.container.image_uri",
        "must not be empty",
    ),
    (
        "package-no-uris",
        J(
            ("primary.container", ...),
            (
                "primary.python_package",
                {"executor_image_uri": EXEC_IMG, "package_uris": [], "python_module": "t.task"},
            ),
        ),
        "primary.python_package.package_uris",
        "at least one package URI",
    ),
    (
        "package-not-gcs",
        J(
            ("primary.container", ...),
            (
                "primary.python_package",
                {
                    "executor_image_uri": EXEC_IMG,
                    "package_uris": ["dist/t.tar.gz"],
                    "python_module": "t.task",
                },
            ),
        ),
        "primary.python_package.package_uris",
        "Cloud Storage location",
    ),
    (
        "package-module",
        J(
            ("primary.container", ...),
            (
                "primary.python_package",
                {
                    "executor_image_uri": EXEC_IMG,
                    "package_uris": ["gs://b/p.tar.gz"],
                    "python_module": "my-task",
                },
            ),
        ),
        "primary.python_package.python_module",
        "dotted Python module name",
    ),
    (
        "package-custom-image",
        J(
            ("primary.container", ...),
            (
                "primary.python_package",
                {"executor_image_uri": IMG, "package_uris": ["gs://b/p.tar.gz"], "python_module": "t.task"},
            ),
        ),
        "primary.python_package.executor_image_uri",
        "must be one of Vertex AI's prebuilt training containers",
    ),
    (
        "nfs-relative-path",
        J(("primary.nfs_mounts", [{"server": "10.0.0.2", "path": "data", "mount_point": "d"}])),
        "primary.nfs_mounts[0].path",
        "must start with '/'",
    ),
    # -- job fields
    ("label-key-upper", J(("labels", {"Team": "ml"})), "labels", "must start with a lowercase letter"),
    ("label-value-long", J(("labels", {"team": "x" * 65})), "labels.team", "at most 64 characters"),
    ("label-value-chars", J(("labels", {"team": "ML Ops"})), "labels.team", "only lowercase letters"),
    ("labels-65", J(("labels", {f"k{i}": "v" for i in range(65)})), "labels", "at most 64 labels"),
    ("display-name-empty", J(("display_name", "")), "display_name", "must not be empty"),
    ("display-name-long", J(("display_name", "x" * 129)), "display_name", "at most 128 characters"),
    ("strategy-deprecated", J(("scheduling", {"strategy": "LOW_COST"})), "scheduling.strategy", "deprecated"),
    ("strategy-unknown", J(("scheduling", {"strategy": "CHEAP"})), "scheduling.strategy", "Input should be"),
    (
        "max-wait-not-flex",
        J(("scheduling", {"strategy": "SPOT", "max_wait_duration": "600s"})),
        "scheduling.max_wait_duration",
        "only applies to strategy FLEX_START",
    ),
    ("timeout-zero", J(("scheduling", {"timeout": "0s"})), "scheduling.timeout", "must be positive"),
    (
        "flex-start-v100",
        J(("scheduling", {"strategy": "FLEX_START"})),
        "scheduling.strategy",
        "FLEX_START needs L4, A100, H100, H200 or B200 GPUs in every pool (primary is n1-highmem-96 with 8 x "
        "NVIDIA_TESLA_V100)",
    ),
    (
        "flex-start-cpu-evaluators",
        J(
            ("primary.machine", dict(A100)),
            ("workers.machine", dict(A100)),
            ("evaluators", {"machine": CPU, "container": {"image_uri": IMG}}),
            ("scheduling", {"strategy": "FLEX_START"}),
        ),
        "scheduling.strategy",
        "(evaluators is n1-standard-8 with no GPUs)",
    ),
    (
        "flex-start-mixed-gpus",
        J(
            ("primary.machine", dict(A100)),
            ("workers.machine", {"machine_type": "g2-standard-8", **GPU("NVIDIA_L4", 1)}),
            ("scheduling", {"strategy": "FLEX_START"}),
        ),
        "scheduling.strategy",
        "FLEX_START needs the same machine configuration in every pool",
    ),
    (
        "flex-start-8-days",
        J(
            ("primary.machine", dict(A100)),
            ("workers.machine", dict(A100)),
            ("scheduling", {"strategy": "FLEX_START", "timeout": 8 * 86400}),
        ),
        "scheduling.timeout",
        "FLEX_START needs a timeout of 7 days or less (got 691200s)",
    ),
    ("timeout-garbage", J(("scheduling", {"timeout": "soon"})), "scheduling.timeout", "valid timedelta"),
    (
        "ip-ranges-without-network",
        J(("reserved_ip_ranges", ["vertex-range"])),
        "reserved_ip_ranges",
        "needs network",
    ),
    (
        "network-format",
        J(("network", "my-vpc")),
        "network",
        "projects/{project number}/global/networks/{network}",
    ),
    (
        "network-project-id",
        J(("network", "projects/my-project/global/networks/vpc")),
        "network",
        "projects/{project number}/global/networks/{network}",
    ),
    ("output-not-gcs", J(("base_output_directory", "/tmp/out")), "base_output_directory", "gs://bucket"),
    (
        "output-bucket-blank",
        J(("base_output_directory", "gs://my bucket/out")),
        "base_output_directory",
        "gs://bucket",
    ),
    ("output-no-bucket", J(("base_output_directory", "gs:///out")), "base_output_directory", "gs://bucket"),
    ("kms-format", J(("encryption_key", "my-key")), "encryption_key", "keyRings"),
    (
        "kms-other-region",
        J(
            ("location", "us-central1"),
            ("encryption_key", "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"),
        ),
        "encryption_key",
        "the key must be in the job's region us-central1 (got a key in europe-west4)",
    ),
    ("service-account", J(("service_account", "robot")), "service_account", "e-mail address"),
    ("tensorboard-format", J(("tensorboard", "tb-1")), "tensorboard", "tensorboards"),
    (
        "experiment-run-alone",
        J(("experiment_run", "projects/p/locations/l/metadataStores/default/contexts/e-r")),
        "experiment_run",
        "needs experiment",
    ),
    (
        "persistent-resource-id",
        J(("persistent_resource_id", "Pool_1")),
        "persistent_resource_id",
        "lowercase letters",
    ),
    ("unknown-field", J(("replicas", 3)), "replicas", "unknown field (known: display_name, "),
    ("location-format", J(("location", "US Central")), "location", "region like 'us-central1'"),
    (
        "location-unknown",
        J(("location", "us-central99")),
        "location",
        "'us-central99' is not a Vertex AI region for custom training (did you mean us-central1?)",
    ),
]
