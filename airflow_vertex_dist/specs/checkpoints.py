"""The checkpoint contract: how a spec's trainer checkpoints, so that a job preempted (a SPOT job) or
ended (a FLEX_START job past its run) resumes from where it was rather than from zero.

``Checkpoints`` on a ``DistributedTrainingJob`` (``checkpoints=``) says the trainer writes its
checkpoints to a directory and resumes from the newest one there: ``directory`` (a ``gs://`` URI), or by
default ``AIP_CHECKPOINT_DIR``, the directory Vertex AI gives every replica when the job has a
``base_output_directory``: ``<base_output_directory>/checkpoints/`` (v1 ``CustomJobSpec.
base_output_directory``: "The following Vertex AI environment variables will be passed to containers or
python modules when this field is set: For CustomJob: ... AIP_CHECKPOINT_DIR =
<base_output_directory>/checkpoints/"; a tuning trial's is ``<base_output_directory>/<trial_id>/
checkpoints/``). The provider cannot see inside the trainer: the field is the DAG author's word, and
what the provider reads back is the directory's objects and their times.

A capacity ladder refuses, when the task is built, a SPOT or FLEX_START rung on a spec without
``checkpoints`` unless the rung says ``accepts_restarts_from_zero=True``
(``airflow_vertex_dist.specs.capacity``); each preemption is logged with the time lost since the last
checkpoint in the directory (``airflow_vertex_dist.operators.checkpoint_log``).
"""

# No ``from __future__ import annotations`` in the modules that define spec models (see job.py).

from pydantic import Field, ValidationInfo, field_validator

from airflow_vertex_dist.specs._base import SpecModel, defers_jinja, fail, is_template
from airflow_vertex_dist.specs._checks import is_gs_uri

__all__ = ["AIP_CHECKPOINT_DIR", "Checkpoints", "check_checkpoints", "checkpoint_directory"]

#: the environment variable Vertex AI sets to ``<base_output_directory>/checkpoints/``
AIP_CHECKPOINT_DIR = "AIP_CHECKPOINT_DIR"


class Checkpoints(SpecModel):
    """The trainer writes checkpoints to ``directory`` (``None``: ``AIP_CHECKPOINT_DIR``, the job's
    ``base_output_directory`` + ``/checkpoints/``) and resumes from the newest one there. ``match_glob``
    (Cloud Storage's ``matchGlob`` of ``objects.list``, relative to the directory: ``ckpt-*.json``) picks
    the checkpoint objects among others the directory holds (an evaluator's scores); ``None``: every
    object in it is a checkpoint."""

    directory: str | None = None
    match_glob: str | None = Field(default=None, min_length=1, max_length=1024)

    @field_validator("directory")
    @classmethod
    def _directory(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or (is_template(value) and defers_jinja(info)):
            return value  # a template is judged once rendered
        if not is_gs_uri(value):
            fail(
                f"checkpoints.directory: must be a Cloud Storage URI 'gs://bucket/...' (got {value!r}); "
                f"or leave it unset for {AIP_CHECKPOINT_DIR}"
            )
        return value


def check_checkpoints(checkpoints: Checkpoints | None, base_output_directory: str | None) -> None:
    """The default directory needs ``base_output_directory``: without it Vertex AI sets no
    ``AIP_CHECKPOINT_DIR``."""
    if checkpoints is not None and checkpoints.directory is None and base_output_directory is None:
        fail(
            f"checkpoints: the default directory is {AIP_CHECKPOINT_DIR}, which Vertex AI sets only when "
            "the job has a base_output_directory; set base_output_directory, or checkpoints.directory"
        )


def checkpoint_directory(checkpoints: Checkpoints | None, base_output_directory: str | None) -> str | None:
    """The directory the trainer checkpoints to (ending in ``/``), ``None`` without ``checkpoints``."""
    if checkpoints is None:
        return None
    if checkpoints.directory is not None:
        return checkpoints.directory.rstrip("/") + "/"
    if base_output_directory is None:
        return None
    return base_output_directory.rstrip("/") + "/checkpoints/"
