"""Rules on a HyperparameterTuningJob's study (v1 ``StudySpec``) and trial counts.

Sources, the comments of ``google/cloud/aiplatform/v1/study.proto`` and
``hyperparameter_tuning_job.proto``:

* ``metrics``: ``MetricSpec.metric_id``: "Must not contain whitespaces and must be unique amongst all
  MetricSpecs." More than one metric is allowed (a multi-objective study).
* ``objective-metric``: ``MetricSpec.safety_config``: "In the case, the metric will be a safety metric.
  You must provide a separate metric for objective metric."
* ``parameter-ids``: ``ParameterSpec.parameter_id``: "Must not contain whitespaces and must be unique
  amongst all ParameterSpecs", while ``conditional_parameter_specs`` lets two children share a name
  under disjoint conditions: top-level ids are unique, and a conditional id repeats no top-level id and
  not its own parent's.
* ``grid-search``: ``Algorithm.GRID_SEARCH``: "To use grid search, all parameters must be INTEGER,
  CATEGORICAL, or DISCRETE."
* ``trial-counts``: ``max_trial_count`` "Required. The desired total number of Trials." and
  ``parallel_trial_count`` "Required. The desired number of Trials to run in parallel.": 0 trials is no
  study, so both are at least 1 (a Required number whose zero is refused); ``max_failed_trial_count``:
  "If set to 0, Vertex AI decides": not negative. ``parallel_trial_count <= max_trial_count`` is inferred
  (more trials cannot run at once than run in all), not verified against the service.
  ``max_failed_trial_count <= max_trial_count``: Google's page "Create a hyperparameter tuning job",
  section "Handle failed trials" (https://docs.cloud.google.com/gemini-enterprise-agent-platform/
  machine-learning/training/using-hyperparameter-tuning, read 2026-12-06): "The ``maxFailedTrialCount``
  value must be less than or equal to ``maxTrialCount``."
* ``tuning-tpu``: the same page, "Hyperparameter training job configuration": "[the service] doesn't
  support hyperparameter tuning jobs that require TPUs": a trial job with a TPU machine type or a TPU
  accelerator is refused at Create (the stricter reading: the page does not say when the service refuses
  it).
* ``nul`` (rules/tasks.py): a trial gets ``--<parameter_id>=<value>`` appended to its args, so a
  parameter id or a categorical value holding a NUL character could not reach the trial's process.
"""

from __future__ import annotations

from typing import Any

from vertex_emulator.rules._common import enum_name, problem
from vertex_emulator.rules.parameters import parameter_problems, walk_parameters
from vertex_emulator.rules.pools import tpu_asked
from vertex_emulator.rules.tasks import nul_problems

__all__ = ["study_problems", "trial_count_problems", "trial_tpu_problems"]


def _no_whitespace(value: str) -> bool:
    return not any(ch.isspace() for ch in value)


def study_problems(study: Any, path: str) -> list[str]:
    """The rules of a raw ``StudySpec``."""
    out: list[str] = []
    ids = [metric.metric_id for metric in study.metrics]
    for index, metric in enumerate(study.metrics):
        if metric.metric_id and not _no_whitespace(metric.metric_id):
            out.append(problem(f"{path}.metrics[{index}].metric_id", "must not contain whitespaces"))
    repeated = sorted({m for m in ids if m and ids.count(m) > 1})
    if repeated:
        out.append(problem(f"{path}.metrics", f"metric ids must be unique (repeated {repeated})"))
    if study.metrics and all(metric.HasField("safety_config") for metric in study.metrics):
        out.append(
            problem(
                f"{path}.metrics",
                "every metric is a safety metric: provide a separate metric (without safety_config) as the "
                "objective",
            )
        )
    top = [param.parameter_id for param in study.parameters]
    repeated = sorted({p for p in top if p and top.count(p) > 1})
    if repeated:
        out.append(problem(f"{path}.parameters", f"parameter ids must be unique (repeated {repeated})"))
    grid = enum_name(study, "algorithm") == "GRID_SEARCH"
    parents: list[str] = []
    for depth, where, param in walk_parameters(study.parameters, f"{path}.parameters"):
        del parents[depth:]
        pid = param.parameter_id
        if pid and not _no_whitespace(pid):
            out.append(problem(f"{where}.parameter_id", "must not contain whitespaces"))
        out.extend(nul_problems([pid], f"{where}.parameter_id", indexed=False))
        if param.WhichOneof("parameter_value_spec") == "categorical_value_spec":
            values = param.categorical_value_spec.values
            out.extend(nul_problems(values, f"{where}.categorical_value_spec.values"))
        if depth and pid and (pid in top or pid in parents):
            out.append(
                problem(
                    f"{where}.parameter_id",
                    f"conditional parameter {pid!r} repeats the id of a top-level or parent parameter",
                )
            )
        if grid and param.WhichOneof("parameter_value_spec") == "double_value_spec":
            out.append(
                problem(
                    f"{path}.algorithm",
                    "GRID_SEARCH needs INTEGER, CATEGORICAL or DISCRETE parameters (got DOUBLE parameter "
                    f"{pid!r})",
                )
            )
        out.extend(parameter_problems(param, where))
        parents.append(pid)
    return out


def trial_count_problems(job: Any) -> list[str]:
    """The trial counts of a raw ``HyperparameterTuningJob``."""
    out: list[str] = []
    if job.max_trial_count < 1:
        out.append(problem("max_trial_count", f"must be at least 1 (got {job.max_trial_count})"))
    if job.parallel_trial_count < 1:
        out.append(problem("parallel_trial_count", f"must be at least 1 (got {job.parallel_trial_count})"))
    elif job.max_trial_count >= 1 and job.parallel_trial_count > job.max_trial_count:
        out.append(
            problem(
                "parallel_trial_count",
                f"must not exceed max_trial_count (got {job.parallel_trial_count} > {job.max_trial_count})",
            )
        )
    if job.max_failed_trial_count < 0:
        out.append(
            problem(
                "max_failed_trial_count",
                f"must not be negative (got {job.max_failed_trial_count}; 0 lets Vertex AI decide)",
            )
        )
    elif job.max_trial_count >= 1 and job.max_failed_trial_count > job.max_trial_count:
        out.append(
            problem(
                "max_failed_trial_count",
                f"must not exceed max_trial_count (got {job.max_failed_trial_count} > {job.max_trial_count})",
            )
        )
    return out


def trial_tpu_problems(job: Any) -> list[str]:
    """A raw ``HyperparameterTuningJob`` whose trial job asks for TPUs (``tuning-tpu``)."""
    out: list[str] = []
    for index, pool in enumerate(job.trial_job_spec.worker_pool_specs):
        asked = tpu_asked(pool)
        if asked is not None:
            out.append(
                problem(
                    f"trial_job_spec.worker_pool_specs[{index}].machine_spec",
                    f"hyperparameter tuning jobs that require TPUs are not supported (got {asked})",
                )
            )
    return out
