"""The bad-spec table's training-job rows (`test_bad_specs.py` runs them): each row is (case id, spec dict,
expected field path, expected rule text). The rows on pools, the Reduction Server and job fields are here;
those on machines and the machine catalog in `bad_job_cases_machines.py`, those on disks, tasks and mounts
in `bad_job_cases_disks.py`; the valid bases the rows edit in `bad_job_bases.py` (imported from here too)."""

from __future__ import annotations

from .bad_job_bases import (
    A100,
    AT,
    CPU,
    EXEC_IMG,
    GPU,
    IMG,
    PARAM,
    RS,
    RS_IMG,
    T4,
    Case,
    J,
    T,
    job_base,
    tuning_base,
)
from .bad_job_cases_disks import DISK_CASES
from .bad_job_cases_machines import MACHINE_CASES

__all__ = [
    "AT",
    "CPU",
    "Case",
    "EXEC_IMG",
    "IMG",
    "J",
    "JOB_CASES",
    "PARAM",
    "RS",
    "RS_IMG",
    "T",
    "T4",
    "job_base",
    "tuning_base",
]

_POOLS_AND_REDUCTION_SERVER: list[Case] = [
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
]

_JOB_FIELDS: list[Case] = [
    # -- job fields
    ("label-key-upper", J(("labels", {"Team": "ml"})), "labels", "must start with a lowercase letter"),
    ("label-value-long", J(("labels", {"team": "x" * 64})), "labels.team", "at most 63 characters"),
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

#: every training-job row, in the table's order: pools, Reduction Server, machines, catalog, disks, job fields
JOB_CASES: list[Case] = [*_POOLS_AND_REDUCTION_SERVER, *MACHINE_CASES, *DISK_CASES, *_JOB_FIELDS]
