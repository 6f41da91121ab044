"""``HyperparameterTuningJob``: a study run as trials of one ``DistributedTrainingJob``."""

# No ``from __future__ import annotations`` in the modules that define spec models, unlike the rest of
# the package: with it, pydantic compiles and evaluates every field's annotation string when the model
# classes are created, on every DAG parse -- about a fifth of this package's parse cost (some 20 M of
# 115 M instructions for the benchmark's DAG file). Forward references are quoted instead.

from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator
from typing_extensions import Self  # typing.Self is Python 3.11+; the package supports 3.10

from airflow_vertex_dist.specs import _api
from airflow_vertex_dist.specs._base import (
    SERVER_CONTEXT,
    SpecModel,
    check_labels,
    defers_jinja,
    fail,
    is_template,
)
from airflow_vertex_dist.specs._catalog_rules import location_rule, offered_rule
from airflow_vertex_dist.specs._job_from_api import job_spec_from_api
from airflow_vertex_dist.specs.job import DistributedTrainingJob
from airflow_vertex_dist.specs.job_rules import check_kms_key, check_kms_key_location
from airflow_vertex_dist.specs.study import Study

__all__ = ["HyperparameterTuningJob"]

_INT32 = 2**31 - 1


class HyperparameterTuningJob(SpecModel):
    """A tuning job: ``study`` explores parameters, each trial runs ``trial_job``'s cluster with
    the trial's values appended to the task args as ``--<parameter_id>=<value>``.

    ``display_name`` defaults to the trial job's; labels and the CMEK key belong to the tuning
    job (the trial job must not set them). ``max_failed_trial_count=0`` lets the service decide (which
    ends the job as soon as its first trial fails); it must not exceed ``max_trial_count``.
    """

    display_name: str | None = None
    trial_job: DistributedTrainingJob
    study: Study
    max_trial_count: int = Field(ge=1, le=_INT32)
    parallel_trial_count: int = Field(default=1, ge=1, le=_INT32)
    max_failed_trial_count: int = Field(default=0, ge=0, le=_INT32)
    labels: dict[str, str] = Field(default_factory=dict)
    encryption_key: str | None = None
    location: str | None = None

    @field_validator("display_name")
    @classmethod
    def _display_name(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not value.strip():
            fail("display_name: must not be empty; give the job a name")
        if value is not None and len(value) > 128 and not (is_template(value) and defers_jinja(info)):
            fail(f"display_name: at most 128 characters (got {len(value)}); shorten it")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        check_labels("labels", value, defer_jinja=defers_jinja(info))
        return value

    @field_validator("location")
    @classmethod
    def _location(cls, value: str | None) -> str | None:
        rule = location_rule("location", value) if value is not None else None
        if rule is not None:
            fail(rule)
        return value

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.parallel_trial_count > self.max_trial_count:
            fail(
                f"parallel_trial_count: must not exceed max_trial_count "
                f"(got {self.parallel_trial_count} > {self.max_trial_count}); lower parallel_trial_count or "
                "raise max_trial_count"
            )
        if self.max_failed_trial_count > self.max_trial_count:
            # Google's tuning page: "The maxFailedTrialCount value must be less than or equal to
            # maxTrialCount."
            fail(
                f"max_failed_trial_count: must not exceed max_trial_count "
                f"(got {self.max_failed_trial_count} > {self.max_trial_count}); lower max_failed_trial_count "
                "or raise max_trial_count"
            )
        tpus = self.trial_job.tpu_pools("trial_job.")
        if tpus:
            # Google's tuning page: "[the service] doesn't support hyperparameter tuning jobs that
            # require TPUs"
            where, asked = tpus[0]
            fail(
                f"{where}: hyperparameter tuning jobs that require TPUs are not supported (got {asked}); "
                "run the trials on GPU or CPU machines"
            )
        if self.trial_job.labels:
            fail("trial_job.labels: set labels on the tuning job; its trial jobs carry them")
        if self.trial_job.encryption_key is not None:
            fail("trial_job.encryption_key: set encryption_key on the tuning job")
        if (
            self.location is not None
            and self.trial_job.location is not None
            and self.location != self.trial_job.location
        ):
            fail(
                f"trial_job.location: differs from the tuning job's location "
                f"({self.trial_job.location} != {self.location}); set the location once, on the tuning job"
            )
        check_kms_key_location(self.encryption_key, self.location or self.trial_job.location)
        rule = offered_rule(self.location, self.trial_job.accelerators("trial_job."))
        if rule is not None:
            fail(rule)
        return self

    @field_validator("encryption_key")
    @classmethod
    def _kms(cls, value: str | None) -> str | None:
        return check_kms_key(value)

    @property
    def effective_display_name(self) -> str:
        return self.display_name or self.trial_job.display_name

    def to_api(self, *, location: str | None = None) -> dict[str, Any]:
        """The v1 REST body of a ``HyperparameterTuningJob`` (camelCase), deterministic."""
        loc = location or self.location or self.trial_job.location
        body: dict[str, Any] = {
            "displayName": self.effective_display_name,
            "studySpec": self.study.to_api(),
            "maxTrialCount": self.max_trial_count,
            "parallelTrialCount": self.parallel_trial_count,
            "trialJobSpec": self.trial_job.job_spec_to_api(location=loc),
        }
        if self.max_failed_trial_count:
            body["maxFailedTrialCount"] = self.max_failed_trial_count
        if self.labels:
            body["labels"] = dict(self.labels)
        if self.encryption_key is not None:
            body["encryptionSpec"] = {"kmsKeyName": self.encryption_key}
        return body

    @classmethod
    def from_api(cls, body: Any, *, location: str | None = None) -> "HyperparameterTuningJob":
        """Parse a v1 ``HyperparameterTuningJob`` JSON body, applying every rule (see
        ``DistributedTrainingJob.from_api``). Raises ``pydantic.ValidationError``."""
        title = cls.__name__
        body = _api.as_dict(title, (), body)
        data: dict[str, Any] = {}
        known = {
            "displayName",
            "studySpec",
            "maxTrialCount",
            "parallelTrialCount",
            "maxFailedTrialCount",
            "trialJobSpec",
            "labels",
            "encryptionSpec",
            *_api.TUNING_JOB_OUTPUT_ONLY,
        }
        _api.unknown_keys(body, known, data, cls.model_fields)
        name = body.get("displayName")
        if not isinstance(name, str):
            _api.reject(title, ("display_name",), "display_name: required, a string", name)
        trial: dict[str, Any] = {"display_name": name}
        trial.update(
            job_spec_from_api(
                title, ("trial_job_spec",), body.get("trialJobSpec"), DistributedTrainingJob.model_fields
            )
        )
        data["trial_job"] = trial
        data["study"] = Study.spec_from_api(title, ("study_spec",), body.get("studySpec"))
        # proto3: an omitted count is 0; max and parallel trial counts are Required (at least 1).
        for key, field in (
            ("maxTrialCount", "max_trial_count"),
            ("parallelTrialCount", "parallel_trial_count"),
            ("maxFailedTrialCount", "max_failed_trial_count"),
        ):
            data[field] = _api.as_int(body.get(key, 0))
        if not _api.is_unset(body.get("labels")):
            data["labels"] = body["labels"]
        if body.get("encryptionSpec") is not None:
            data["encryption_key"] = _api.kms_key(title, body["encryptionSpec"])
        if location is not None:
            data["location"] = location
        return cls.model_validate(data, context=SERVER_CONTEXT)
