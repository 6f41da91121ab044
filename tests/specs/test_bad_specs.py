"""A table of bad specs: each is refused with a message naming the field path and the rule."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from airflow_vertex_dist.specs import DistributedTrainingJob, HyperparameterTuningJob, error_lines

IMG = "example.com/ml/trainer:1.0"
RS_IMG = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
V100X8 = {"machine_type": "n1-highmem-96", "accelerator_type": "NVIDIA_TESLA_V100", "accelerator_count": 8}


def _job() -> dict[str, Any]:
    return {
        "display_name": "job",
        "primary": {"machine": dict(V100X8), "container": {"image_uri": IMG}},
        "workers": {"machine": dict(V100X8), "replica_count": 4, "container": {"image_uri": IMG}},
    }


def _tuning() -> dict[str, Any]:
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


def J(*edits: tuple[str, Any]) -> dict[str, Any]:
    return _set(_job, *edits)


def T(*edits: tuple[str, Any]) -> dict[str, Any]:
    return _set(_tuning, *edits)


RS = {"replica_count": "auto"}
CPU = {"machine_type": "n1-standard-8"}
PARAM = "study.parameters.0"
#: the same parameter as an error names it (the union tag, "double" etc., is not part of the path)
AT = "study.parameters[0]"

# (case id, spec dict, expected field path, expected rule text)
BAD: list[tuple[str, dict[str, Any], str, str]] = [
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
                {"executor_image_uri": IMG, "package_uris": ["gs://b/p.tar.gz"], "python_module": "t.task"},
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
        J(("reduction_server", {"machine_type": "x9-custom-8"})),
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
        "1, 2, 4, 8 or 16 GPUs",
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
        "Input should be",
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
                {"executor_image_uri": IMG, "package_uris": [], "python_module": "t.task"},
            ),
        ),
        "primary.python_package.package_uris",
        "at least one package URI",
    ),
    (
        "package-module",
        J(
            ("primary.container", ...),
            (
                "primary.python_package",
                {"executor_image_uri": IMG, "package_uris": ["gs://b/p.tar.gz"], "python_module": "my-task"},
            ),
        ),
        "primary.python_package.python_module",
        "dotted Python module name",
    ),
    (
        "nfs-relative-path",
        J(("primary.nfs_mounts", [{"server": "10.0.0.2", "path": "data", "mount_point": "d"}])),
        "primary.nfs_mounts[0].path",
        "must start with '/'",
    ),
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
    ("timeout-garbage", J(("scheduling", {"timeout": "soon"})), "scheduling.timeout", "valid timedelta"),
    (
        "ip-ranges-without-network",
        J(("reserved_ip_ranges", ["vertex-range"])),
        "reserved_ip_ranges",
        "needs network",
    ),
    ("network-format", J(("network", "my-vpc")), "network", "projects/{project}/global/networks/{network}"),
    ("output-not-gcs", J(("base_output_directory", "/tmp/out")), "base_output_directory", "gs://bucket"),
    (
        "output-bucket-blank",
        J(("base_output_directory", "gs://my bucket/out")),
        "base_output_directory",
        "gs://bucket",
    ),
    ("output-no-bucket", J(("base_output_directory", "gs:///out")), "base_output_directory", "gs://bucket"),
    ("kms-format", J(("encryption_key", "my-key")), "encryption_key", "keyRings"),
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
    # -- tuning jobs and studies
    (
        "parallel-over-max",
        T(("parallel_trial_count", 8)),
        "parallel_trial_count",
        "must not exceed max_trial_count",
    ),
    ("max-trials-zero", T(("max_trial_count", 0)), "max_trial_count", "greater than or equal to 1"),
    (
        "failed-negative",
        T(("max_failed_trial_count", -1)),
        "max_failed_trial_count",
        "greater than or equal to 0",
    ),
    (
        "trial-job-labels",
        T(("trial_job.labels", {"a": "b"})),
        "trial_job.labels",
        "set labels on the tuning job",
    ),
    ("no-metrics", T(("study.metrics", [])), "study.metrics", "at least one metric"),
    (
        "duplicate-metrics",
        T(
            (
                "study.metrics",
                [{"metric_id": "a", "goal": "MAXIMIZE"}, {"metric_id": "a", "goal": "MINIMIZE"}],
            )
        ),
        "study.metrics",
        "must be unique",
    ),
    ("metric-goal", T(("study.metrics.0.goal", "BIGGER")), "study.metrics[0].goal", "Input should be"),
    (
        "metric-id-space",
        T(("study.metrics.0.metric_id", "my metric")),
        "study.metrics[0].metric_id",
        "no whitespace",
    ),
    ("no-parameters", T(("study.parameters", [])), "study.parameters", "at least one parameter"),
    (
        "double-min-max",
        T((f"{PARAM}.min_value", 1.0), (f"{PARAM}.max_value", 1.0)),
        f"{AT}.min_value",
        "must be below max_value",
    ),
    (
        "log-scale-zero",
        T((f"{PARAM}.min_value", 0.0), (f"{PARAM}.scale_type", "LOG")),
        f"{AT}.scale_type",
        "strictly positive",
    ),
    (
        "integer-min-max",
        T((PARAM, {"type": "integer", "parameter_id": "n", "min_value": 5, "max_value": 2})),
        f"{AT}.min_value",
        "must be below max_value",
    ),
    (
        "discrete-order",
        T((PARAM, {"type": "discrete", "parameter_id": "d", "values": [1, 3, 2]})),
        f"{AT}.values",
        "increasing and at least 1e-10 apart",
    ),
    (
        "discrete-too-many",
        T((PARAM, {"type": "discrete", "parameter_id": "d", "values": list(range(1001))})),
        f"{AT}.values",
        "at most 1,000 values",
    ),
    (
        "categorical-empty",
        T((PARAM, {"type": "categorical", "parameter_id": "c", "values": []})),
        f"{AT}.values",
        "at least one value",
    ),
    (
        "categorical-scale",
        T((PARAM, {"type": "categorical", "parameter_id": "c", "values": ["a"], "scale_type": "LOG"})),
        f"{AT}.scale_type",
        "leave unset for categorical",
    ),
    ("parameter-type-missing", T((f"{PARAM}.type", ...)), AT, "Unable to extract tag"),
    (
        "grid-with-double",
        T(("study.algorithm", "GRID_SEARCH")),
        "study.algorithm",
        "GRID_SEARCH takes only integer, categorical and discrete parameters",
    ),
    (
        "duplicate-parameters",
        T(
            (
                "study.parameters",
                [
                    {"type": "double", "parameter_id": "lr", "min_value": 0.1, "max_value": 0.2},
                    {"type": "integer", "parameter_id": "lr", "min_value": 1, "max_value": 2},
                ],
            )
        ),
        "study.parameters",
        "parameter ids must be unique",
    ),
    (
        "double-children",
        T(
            (
                f"{PARAM}.conditional_parameters",
                [
                    {
                        "parent_values": [1],
                        "parameter": {"type": "integer", "parameter_id": "n", "min_value": 1, "max_value": 2},
                    }
                ],
            )
        ),
        f"{AT}.conditional_parameters",
        "cannot have conditional children",
    ),
    (
        "child-outside-int-range",
        T(
            (
                PARAM,
                {
                    "type": "integer",
                    "parameter_id": "layers",
                    "min_value": 1,
                    "max_value": 4,
                    "conditional_parameters": [
                        {
                            "parent_values": [9],
                            "parameter": {
                                "type": "integer",
                                "parameter_id": "units",
                                "min_value": 8,
                                "max_value": 64,
                            },
                        }
                    ],
                },
            )
        ),
        f"{AT}.parent_values",
        "9 is outside parent 'layers''s range [1, 4]",
    ),
    (
        "child-not-in-categories",
        T(
            (
                PARAM,
                {
                    "type": "categorical",
                    "parameter_id": "opt",
                    "values": ["adam"],
                    "conditional_parameters": [
                        {
                            "parent_values": ["sgd"],
                            "parameter": {
                                "type": "double",
                                "parameter_id": "momentum",
                                "min_value": 0.0,
                                "max_value": 1.0,
                            },
                        }
                    ],
                },
            )
        ),
        f"{AT}.parent_values",
        "'sgd' is not one of parent 'opt''s values",
    ),
    (
        "children-overlap",
        T(
            (
                PARAM,
                {
                    "type": "categorical",
                    "parameter_id": "opt",
                    "values": ["a", "b"],
                    "conditional_parameters": [
                        {
                            "parent_values": ["a"],
                            "parameter": {"type": "categorical", "parameter_id": "x", "values": ["1"]},
                        },
                        {
                            "parent_values": ["a", "b"],
                            "parameter": {"type": "categorical", "parameter_id": "x", "values": ["2"]},
                        },
                    ],
                },
            )
        ),
        f"{AT}.conditional_parameters",
        "must have disjoint parent_values",
    ),
    (
        "two-stopping-rules",
        T(("study.median_automated_stopping", {}), ("study.decay_curve_stopping", {})),
        "study",
        "at most one automated stopping rule",
    ),
    ("tuning-kms", T(("encryption_key", "key")), "encryption_key", "keyRings"),
    (
        "tuning-location-mismatch",
        T(("location", "us-central1"), ("trial_job.location", "europe-west4")),
        "trial_job.location",
        "differs from the tuning job's location",
    ),
]


RS_ON_CPU = (
    "add GPUs to the primary and the workers (machine.accelerator_type and accelerator_count), or for CPU "
    "training drop reduction_server and use parameter_servers instead"
)
#: What each rule's message tells the user to do: a fix, or the form the value must take (every rule of
#: the table has an entry, so a new rule comes with its advice).
ADVICE: dict[str, str] = {
    "primary-2-replicas": "put the others in workers",
    "ps-and-reducers": "keep one of them",
    "task-both": "set container=Container(...) or python_package=PythonPackage(...)",
    "task-neither": "set container=Container(...) or python_package=PythonPackage(...)",
    "env-empty-value": "give it a value, or leave the variable out",
    "pool-zero-replicas": "leave a pool out, or send it as {}, to skip it",
    "rs-image-in-workers": "use reduction_server=ReductionServer(...)",
    "rs-accelerators": "drop the accelerator and use a CPU machine such as n1-highcpu-16",
    "rs-args": "remove them",
    "rs-gpu-machine": "use n1-highcpu-16, or an N2 machine with 16 or more vCPUs",
    "rs-cpu-primary": RS_ON_CPU,
    "rs-cpu-says-what-to-do": RS_ON_CPU,
    "rs-cpu-workers": RS_ON_CPU,
    "rs-tpu": "drop reduction_server",
    "rs-undersized": "use 16 or more, or set allow_undersized=True",
    "rs-auto-unknown-bandwidth": "set replica_count",
    "rs-bad-image": "or leave image_uri unset for the image nearest the job's location",
    "rs-zero": "must be at least 1, or 'auto'",
    "count-without-type": "set accelerator_type too, or use 0",
    "type-without-count": "set it, or drop accelerator_type",
    "gpu-count-3": "use one of those counts",
    "tpu-v3-on-n1": "set machine_type='cloud-tpu' and accelerator_count=8",
    "topology-on-gpu": "drop tpu_topology, or use a TPU machine type",
    "topology-format": "must look like '2x2' or '2x2x1'",
    "machine-type-format": "must look like 'n1-standard-4' (lowercase family-shape words joined by '-')",
    "gpu-partition-count": "set accelerator_count=1",
    "reservation-incomplete": "set both, or use ANY_RESERVATION or NO_RESERVATION",
    "disk-small": "must be within [100, 64000]",
    "env-name": "rename it",
    "image-empty": "give it a value",
    "package-no-uris": "add the gs:// URI of your package's sdist",
    "package-module": "must be a dotted Python module name such as 'trainer.task'",
    "nfs-relative-path": "give the absolute export path",
    "label-key-upper": "rename it",
    "label-value-long": "shorten it",
    "label-value-chars": "lowercase it and replace the rest with '-'",
    "labels-65": "drop some",
    "display-name-empty": "give the job a name",
    "display-name-long": "shorten it",
    "strategy-deprecated": "use STANDARD or SPOT",
    "max-wait-not-flex": "set strategy='FLEX_START', or drop max_wait_duration",
    "timeout-zero": "give a duration such as '86400s'",
    "ip-ranges-without-network": "set network too, or drop reserved_ip_ranges",
    "network-format": "must be 'projects/{project}/global/networks/{network}'",
    "output-not-gcs": "must be a Cloud Storage URI 'gs://bucket/...'",
    "output-bucket-blank": "must be a Cloud Storage URI 'gs://bucket/...'",
    "output-no-bucket": "must be a Cloud Storage URI 'gs://bucket/...'",
    "kms-format": "must be 'projects/{p}/locations/{l}/keyRings/{r}/cryptoKeys/{k}'",
    "service-account": "such as 'trainer@my-project.iam.gserviceaccount.com'",
    "tensorboard-format": "must be 'projects/{project}/locations/{location}/tensorboards/{id}'",
    "experiment-run-alone": "set experiment too, or drop experiment_run",
    "persistent-resource-id": "must be 1-63 lowercase letters, digits or '-', starting with a letter",
    "location-format": "must be a region like 'us-central1'",
    "parallel-over-max": "lower parallel_trial_count or raise max_trial_count",
    "trial-job-labels": "set labels on the tuning job",
    "no-metrics": "add Metric(metric_id=..., goal=...)",
    "duplicate-metrics": "remove the repeats",
    "metric-id-space": "use an id such as 'val_loss'",
    "no-parameters": "add the parameters to search",
    "double-min-max": "swap them, or use a categorical parameter for one value",
    "log-scale-zero": "raise its lowest value above 0, or use scale_type LINEAR",
    "integer-min-max": "swap them, or use a categorical parameter for one value",
    "discrete-order": "sort them and drop repeats",
    "discrete-too-many": "use an integer or double parameter for a range",
    "categorical-empty": "list its values",
    "categorical-scale": "drop it",
    "grid-with-double": "use RANDOM_SEARCH or the default algorithm, or make it a discrete parameter",
    "duplicate-parameters": "rename the repeats",
    "double-children": "make the parent an integer, categorical or discrete parameter",
    "child-outside-int-range": "use values in that range, or widen it",
    "child-not-in-categories": "use one of them, or add it to the parent's values",
    "children-overlap": "list each parent value under one of them only",
    "two-stopping-rules": "keep one",
    "tuning-kms": "must be 'projects/{p}/locations/{l}/keyRings/{r}/cryptoKeys/{k}'",
    "tuning-location-mismatch": "set the location once, on the tuning job",
}


def test_every_rule_says_what_to_do() -> None:
    rules = []
    for case, data, path, _ in BAD:
        model = HyperparameterTuningJob if "study" in data else DistributedTrainingJob
        with pytest.raises(ValidationError) as info:
            model.model_validate(data)
        if {e["type"] for e in info.value.errors()} != {"vertex_spec_rule"}:
            continue  # pydantic's own checks (types, enums, required fields) say what they expect
        rules.append(case)
        line = next(line for line in error_lines(info.value) if line.startswith(path + ":"))
        assert ADVICE.get(case, "<no advice in the table>") in line, (case, line)
    assert sorted(rules) == sorted(ADVICE)


def test_table_is_big_enough() -> None:
    assert len(BAD) >= 40
    assert len({case[0] for case in BAD}) == len(BAD)


@pytest.mark.parametrize(("data", "path", "rule"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_spec_is_refused_with_path_and_rule(data: dict[str, Any], path: str, rule: str) -> None:
    model = HyperparameterTuningJob if "study" in data else DistributedTrainingJob
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    lines = error_lines(info.value)
    assert any(line.startswith(path + ":") and rule in line for line in lines), lines
    assert rule in str(info.value)


def test_bases_are_valid() -> None:
    """The table's bases validate, so each refusal comes from its one edit."""
    DistributedTrainingJob.model_validate(_job())
    DistributedTrainingJob.model_validate(J(("reduction_server", RS)))
    HyperparameterTuningJob.model_validate(_tuning())
