"""A table of bad specs: each is refused with a message naming the field path and the rule (the rows:
`bad_job_cases.py` and `bad_study_cases.py`)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from airflow_vertex_dist.specs import DistributedTrainingJob, HyperparameterTuningJob, error_lines

from .bad_job_cases import JOB_CASES, RS, Case, J, job_base, tuning_base
from .bad_study_cases import STUDY_CASES

BAD: list[Case] = [*JOB_CASES, *STUDY_CASES]


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
    "gpu-count-3": "use one of those counts, or another machine type",
    "gpu-count-for-machine": "use one of those counts, or a machine type that takes 1 x NVIDIA_TESLA_T4",
    "machine-type-misspelt": "use 'n1-standard-4'",
    "machine-type-unknown": "use one of airflow_vertex_dist.specs.catalog.MACHINE_SERIES, such as",
    "a100-80gb-on-n1": "use one of those, or a machine type for NVIDIA_A100_80GB such as a2-ultragpu-1g",
    "t4-on-e2": "drop accelerator_type, or use a machine type for NVIDIA_TESLA_T4 such as n1-standard-4",
    "k80-anywhere": "use another GPU, such as NVIDIA_TESLA_T4",
    "a2-without-its-gpus": "set accelerator_type='NVIDIA_TESLA_A100' and accelerator_count=1",
    "a2-other-count": "set accelerator_count=1, or a machine type with 2 x NVIDIA_TESLA_A100 such as",
    "g2-other-gpu": "set accelerator_type='NVIDIA_L4' and accelerator_count=1, or a machine type for",
    "cloud-tpu-without-tpus": "set accelerator_type='TPU_V3' and accelerator_count=8",
    "tpu-vm-chips": "set accelerator_count=4",
    "rs-machine-unknown": "(did you mean n1-highcpu-96?); use 'n1-highcpu-96'",
    "disk-type": "use one of pd-ssd, pd-standard, hyperdisk-balanced",
    "disk-pd-balanced": "use one of pd-ssd, pd-standard, hyperdisk-balanced",
    "disk-hyperdisk-on-n1": "set disk=Disk(boot_disk_type='pd-ssd')",
    "disk-pd-ssd-on-a3-ultra": "set disk=Disk(boot_disk_type='hyperdisk-balanced')",
    "rs-disk-hyperdisk": "set disk=Disk(boot_disk_type='pd-ssd')",
    "location-unknown": "use a region such as 'us-central1'",
    "tpu-v3-on-n1": "set machine_type='cloud-tpu'",
    "topology-on-gpu": "drop tpu_topology, or use a TPU machine type",
    "topology-format": "must look like '2x2' or '2x2x1'",
    "topology-not-in-table": "use one of them, or another TPU VM machine type",
    "topology-not-on-the-page": "use one of them, or another TPU VM machine type",
    "cloud-tpu-count": "set accelerator_count=8, or a TPU Pod's count",
    "tpu-with-workers": "drop workers",
    "tpu-in-workers": "move it to primary and drop workers",
    "tpu-v6e-names-no-accelerator": "drop accelerator_type and accelerator_count",
    "machine-type-format": "must look like 'n1-standard-4' (lowercase family-shape words joined by '-')",
    "gpu-partition-count": "set accelerator_count=1",
    "reservation-incomplete": "set both, or use ANY_RESERVATION or NO_RESERVATION",
    "disk-small": "must be within [100, 64000]",
    "env-name": "rename it",
    "image-empty": "give it a value",
    "package-no-uris": "add the gs:// URI of your package's sdist",
    "package-not-gcs": "upload the package to Cloud Storage and give its gs:// URI",
    "package-module": "must be a dotted Python module name such as 'trainer.task'",
    "package-custom-image": "pick one, or run a custom image as container=Container(...)",
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
    "flex-start-v100": "give every pool one of those GPUs, or use STANDARD or SPOT",
    "flex-start-cpu-evaluators": "give every pool one of those GPUs, or use STANDARD or SPOT",
    "flex-start-mixed-gpus": "use one machine, GPU and count in every pool, or use STANDARD or SPOT",
    "flex-start-8-days": "shorten it, or use STANDARD or SPOT",
    "ip-ranges-without-network": "set network too, or drop reserved_ip_ranges",
    "network-format": "name the project by its number, as in projects/12345/global/networks/vpc",
    "network-project-id": "name the project by its number, as in projects/12345/global/networks/vpc",
    "kms-other-region": "use a key ring in us-central1",
    "tuning-kms-other-region": "use a key ring in us-central1",
    "safety-metrics-only": "add the objective as a separate metric without safety_config",
    "output-not-gcs": "must be a Cloud Storage URI 'gs://bucket/...'",
    "output-bucket-blank": "must be a Cloud Storage URI 'gs://bucket/...'",
    "output-no-bucket": "must be a Cloud Storage URI 'gs://bucket/...'",
    "kms-format": "must be 'projects/{p}/locations/{l}/keyRings/{r}/cryptoKeys/{k}'",
    "service-account": "such as 'trainer@my-project.iam.gserviceaccount.com'",
    "tensorboard-format": "give the TensorBoard instance's resource name, or leave tensorboard unset",
    "experiment-run-alone": "set experiment too, or drop experiment_run",
    "persistent-resource-id": "must be 1-63 lowercase letters, digits or '-', starting with a letter",
    "location-format": "must be a region like 'us-central1'",
    "parallel-over-max": "lower parallel_trial_count or raise max_trial_count",
    "failed-over-max": "lower max_failed_trial_count or raise max_trial_count",
    "trial-tpu": "run the trials on GPU or CPU machines",
    "trial-job-labels": "set labels on the tuning job",
    "no-metrics": "add Metric(metric_id=..., goal=...)",
    "duplicate-metrics": "remove the repeats",
    "metric-id-space": "use an id such as 'val_loss'",
    "no-parameters": "add the parameters to search",
    "double-min-max": "both bounds are inclusive); swap them",
    "log-scale-zero": "raise its lowest value above 0, or use scale_type LINEAR",
    "integer-min-max": "both bounds are inclusive); swap them",
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
    DistributedTrainingJob.model_validate(job_base())
    DistributedTrainingJob.model_validate(J(("reduction_server", RS)))
    HyperparameterTuningJob.model_validate(tuning_base())
