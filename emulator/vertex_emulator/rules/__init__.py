"""The emulator's own rules for what a Create request may ask for, read from Google's documentation
and the v1 protos (never from the provider's spec models, so the two can disagree and a differential
test sees it).

``check_create(kind, message, location)`` takes the job as the proto-plus message the transport parsed
(``CustomJob`` or ``HyperparameterTuningJob``), so proto3 defaults apply as the service sees them: an
unset number is 0, an unset enum is its ``*_UNSPECIFIED`` value. It returns every problem found, each
``"<field path>: <rule>"``; ``format_problems`` writes them as the service's ``List of found errors``.

The rules, by concern (each module cites its sources; ``sources.RULES`` lists them all):

* ``required``: fields the reference marks ``Required.``;
* ``labels``: display name and labels;
* ``resources``: the names a job refers to (network, TensorBoard, CMEK key, ...);
* ``pools``: the worker pool layout and each used pool, with ``machines`` (machine types,
  accelerators and their counts, where they are offered, boot disks, locations);
* ``tasks``: container and Python package specs, environment variables, prebuilt executor images;
* ``reduction``: the Reduction Server;
* ``scheduling``: strategies (flex-start, Spot), timeouts, ``max_wait_duration``;
* ``study`` and ``parameters``: the study, its parameters and the trial counts.

The rule modules are imported when a request is first checked; the machine catalog they read is
generated data of its own (``vertex_emulator._generated.catalog``).
"""

from __future__ import annotations

from typing import Any

from vertex_emulator.rules._common import format_problems, raw

__all__ = ["check_create", "format_problems", "job_spec_problems"]

#: The Create request's field holding the job, and the job's field holding its CustomJobSpec, by kind.
_FIELDS = {
    "customJobs": ("custom_job", "job_spec"),
    "hyperparameterTuningJobs": ("hyperparameter_tuning_job", "trial_job_spec"),
}


def job_spec_problems(spec: Any, location: str, path: str) -> list[str]:
    """Every rule of a raw ``CustomJobSpec`` (a CustomJob's ``job_spec`` or a tuning job's
    ``trial_job_spec``), its fields named under ``path``."""
    from vertex_emulator.rules import machines
    from vertex_emulator.rules.pools import pool_problems
    from vertex_emulator.rules.reduction import reduction_problems
    from vertex_emulator.rules.resources import resource_problems
    from vertex_emulator.rules.scheduling import scheduling_problems
    from vertex_emulator.rules.tasks import task_problems

    out = pool_problems(spec, location, path)
    pools = spec.worker_pool_specs
    for index, pool in enumerate(pools):
        if pool.ByteSize():
            out.extend(task_problems(pool, f"{path}.worker_pool_specs[{index}]"))
    out.extend(reduction_problems(pools, f"{path}.worker_pool_specs"))
    out.extend(scheduling_problems(spec, path))
    out.extend(resource_problems(spec, path, machines.location_problems))
    return out


def check_create(kind: str, message: Any, location: str) -> list[str]:
    """Every problem of a Create request's job (``kind``: ``customJobs`` or ``hyperparameterTuningJobs``)
    created in ``location``; an empty list when the service would accept it."""
    from vertex_emulator.rules import machines
    from vertex_emulator.rules.labels import display_name_problems, label_problems
    from vertex_emulator.rules.required import required_problems
    from vertex_emulator.rules.resources import kms_problems
    from vertex_emulator.rules.study import study_problems, trial_count_problems, trial_tpu_problems

    request_field, spec_field = _FIELDS[kind]
    job = raw(message)
    out = list(machines.location_problems(location))
    out.extend(required_problems(job, request_field))
    out.extend(display_name_problems(job.display_name, "display_name"))
    out.extend(label_problems(dict(job.labels), "labels"))
    if job.HasField("encryption_spec"):
        out.extend(kms_problems(job.encryption_spec, location, "encryption_spec"))
    if job.HasField(spec_field):
        out.extend(job_spec_problems(getattr(job, spec_field), location, spec_field))
    if kind == "hyperparameterTuningJobs":
        if job.HasField("study_spec"):
            out.extend(study_problems(job.study_spec, "study_spec"))
        out.extend(trial_count_problems(job))
        out.extend(trial_tpu_problems(job))
    return out
