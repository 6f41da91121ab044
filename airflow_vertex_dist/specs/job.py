"""``DistributedTrainingJob``: a whole training cluster, rendered as a v1 ``CustomJob`` body."""

# No ``from __future__ import annotations`` in the modules that define spec models, unlike the rest of
# the package: with it, pydantic compiles and evaluates every field's annotation string when the model
# classes are created, on every DAG parse -- about a fifth of this package's parse cost (some 20 M of
# 115 M instructions for the benchmark's DAG file). Forward references are quoted instead.

from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator
from typing_extensions import Self  # typing.Self is Python 3.11+; the package supports 3.10

from airflow_vertex_dist._generated import catalog
from airflow_vertex_dist.common.regex import LazyRegex
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
from airflow_vertex_dist.specs._checks import is_gs_uri
from airflow_vertex_dist.specs._job_from_api import job_spec_from_api
from airflow_vertex_dist.specs.checkpoints import Checkpoints, check_checkpoints
from airflow_vertex_dist.specs.cluster import (
    POOL_ROLES,
    ReductionServer,
    WorkerPool,
    is_reduction_server_image,
)
from airflow_vertex_dist.specs.job_rules import (
    FLEX_START_GPUS,
    ReducerSizing,
    check_flex_start,
    check_kms_key,
    check_kms_key_location,
    check_reduction_server,
    check_reservations,
    check_tpu_pools,
    machine_egress_gbps,
    reducer_sizing,
)
from airflow_vertex_dist.specs.options import PscInterfaceConfig, Scheduling

__all__ = [
    "POOL_ROLES",
    "DistributedTrainingJob",
    "ReducerSizing",
    "FLEX_START_GPUS",
    "check_kms_key",
    "check_kms_key_location",
    "machine_egress_gbps",
]

_LOCATION_RE = LazyRegex(r"^[a-z]+(-[a-z]+)*\d*$")
_SERVICE_ACCOUNT_RE = LazyRegex(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
#: CustomJobSpec.network: "projects/{project}/global/networks/{network}. Where {project} is a project
#: number, as in 12345"
_NETWORK_RE = LazyRegex(r"^projects/\d+/global/networks/[^/\s]+$")
_TENSORBOARD_RE = LazyRegex(r"^projects/[^/\s]+/locations/[^/\s]+/tensorboards/[^/\s]+$")
_EXPERIMENT_RE = LazyRegex(r"^projects/[^/\s]+/locations/[^/\s]+/metadataStores/[^/\s]+/contexts/[^/\s]+$")
_MODEL_RE = LazyRegex(r"^projects/[^/\s]+/locations/[^/\s]+/models/[^/\s]+$")
_RESOURCE_ID_RE = LazyRegex(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")
_IP_RANGE_RE = LazyRegex(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


class DistributedTrainingJob(SpecModel):
    """A distributed training job: pools at fixed positions (0 primary, 1 workers, 2 parameter
    servers or Reduction Server, 3 evaluators) plus every user-settable ``CustomJobSpec`` field.

    ``location`` is optional: it picks the Reduction Server image's multi-region; the location
    given to ``to_api`` (where the job is actually created) takes precedence.
    """

    display_name: str
    location: str | None = None
    primary: WorkerPool
    workers: WorkerPool | None = None
    parameter_servers: WorkerPool | None = None
    reduction_server: ReductionServer | None = None
    evaluators: WorkerPool | None = None
    scheduling: Scheduling | None = None
    service_account: str | None = None
    network: str | None = None
    reserved_ip_ranges: tuple[str, ...] = ()
    psc_interface_config: PscInterfaceConfig | None = None
    base_output_directory: str | None = None
    checkpoints: Checkpoints | None = None  # how the trainer checkpoints (specs.checkpoints); not sent
    protected_artifact_location_id: str | None = None
    tensorboard: str | None = None
    enable_web_access: bool = False
    enable_dashboard_access: bool = False
    persistent_resource_id: str | None = None
    experiment: str | None = None
    experiment_run: str | None = None
    models: tuple[str, ...] = ()
    labels: dict[str, str] = Field(default_factory=dict)
    encryption_key: str | None = None

    # ---- field rules -------------------------------------------------------------------------

    @field_validator("display_name")
    @classmethod
    def _display_name(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip():
            fail("display_name: must not be empty; give the job a name")
        if len(value) > 128 and not (is_template(value) and defers_jinja(info)):
            fail(f"display_name: at most 128 characters (got {len(value)}); shorten it")
        return value

    @field_validator("location")
    @classmethod
    def _location(cls, value: str | None) -> str | None:
        if value is not None and not _LOCATION_RE.match(value):
            fail(f"location: must be a region like 'us-central1' (got {value!r})")
        rule = location_rule("location", value) if value is not None else None
        if rule is not None:
            fail(rule)
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        check_labels("labels", value, defer_jinja=defers_jinja(info))
        return value

    @field_validator("service_account")
    @classmethod
    def _service_account(cls, value: str | None, info: ValidationInfo) -> str | None:
        if is_template(value) and defers_jinja(info):
            return value  # judged once rendered
        if value is not None and not _SERVICE_ACCOUNT_RE.match(value):
            fail(
                "service_account: must be a service account e-mail address such as "
                f"'trainer@my-project.iam.gserviceaccount.com' (got {value!r})"
            )
        return value

    @field_validator("network")
    @classmethod
    def _network(cls, value: str | None) -> str | None:
        if value is not None and not _NETWORK_RE.match(value):
            fail(
                "network: must be 'projects/{project number}/global/networks/{network}' "
                f"(got {value!r}); name the project by its number, as in projects/12345/global/networks/vpc"
            )
        return value

    @field_validator("reserved_ip_ranges")
    @classmethod
    def _ip_ranges(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _IP_RANGE_RE.match(name) or len(name) > 63:
                fail(
                    "reserved_ip_ranges: must be names of reserved IP ranges, not addresses (got "
                    f"{name!r}); give the names"
                )
        return value

    @field_validator("base_output_directory")
    @classmethod
    def _output(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or (is_template(value) and defers_jinja(info)):
            return value  # a template is judged once rendered
        if not is_gs_uri(value):
            fail(f"base_output_directory: must be a Cloud Storage URI 'gs://bucket/...' (got {value!r})")
        return value

    @field_validator("protected_artifact_location_id")
    @classmethod
    def _protected(cls, value: str | None) -> str | None:
        if value is not None and not _LOCATION_RE.match(value):
            fail(f"protected_artifact_location_id: must be a region like 'us-central1' (got {value!r})")
        return value

    @field_validator("tensorboard")
    @classmethod
    def _tensorboard(cls, value: str | None) -> str | None:
        if value is not None and not _TENSORBOARD_RE.match(value):
            fail(
                "tensorboard: must be 'projects/{project}/locations/{location}/tensorboards/{id}' "
                f"(got {value!r}); give the TensorBoard instance's resource name, or leave tensorboard unset"
            )
        return value

    @field_validator("persistent_resource_id")
    @classmethod
    def _persistent(cls, value: str | None) -> str | None:
        if value is not None and not _RESOURCE_ID_RE.match(value):
            fail(
                "persistent_resource_id: must be 1-63 lowercase letters, digits or '-', starting with "
                f"a letter (got {value!r})"
            )
        return value

    @field_validator("experiment", "experiment_run")
    @classmethod
    def _experiment(cls, value: str | None) -> str | None:
        if value is not None and not _EXPERIMENT_RE.match(value):
            fail(
                "experiment: must be 'projects/{project}/locations/{location}/metadataStores/{store}/"
                f"contexts/{{name}}' (got {value!r})"
            )
        return value

    @field_validator("models")
    @classmethod
    def _models(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _MODEL_RE.match(name.split("@", 1)[0]):
                fail(
                    f"models: must be 'projects/{{p}}/locations/{{l}}/models/{{m}}[@version]' (got {name!r})"
                )
        return value

    @field_validator("encryption_key")
    @classmethod
    def _kms(cls, value: str | None) -> str | None:
        return check_kms_key(value)

    # ---- cross-field rules -------------------------------------------------------------------

    @model_validator(mode="after")
    def _cluster_rules(self) -> Self:
        if self.primary.replica_count != 1:
            fail(
                "primary.replica_count: worker pool 0 holds exactly 1 replica, the primary "
                f"(got {self.primary.replica_count}; put the others in workers)"
            )
        if self.parameter_servers is not None and self.reduction_server is not None:
            fail(
                "parameter_servers/reduction_server: worker pool 2 holds parameter servers or a "
                "Reduction Server, never both; keep one of them"
            )
        for role in POOL_ROLES:
            pool = getattr(self, role)
            if (
                pool is not None
                and pool.container is not None
                and is_reduction_server_image(pool.container.image_uri)
            ):
                fail(
                    f"{role}.container.image_uri: the Reduction Server image runs only in worker "
                    "pool 2; use reduction_server=ReductionServer(...)"
                )
        if self.reserved_ip_ranges and self.network is None:
            fail(
                "reserved_ip_ranges: needs network (the ranges are reserved in that VPC network); set "
                "network too, or drop reserved_ip_ranges"
            )
        if self.experiment_run is not None and self.experiment is None:
            fail("experiment_run: needs experiment; set experiment too, or drop experiment_run")
        check_kms_key_location(self.encryption_key, self.location)
        check_checkpoints(self.checkpoints, self.base_output_directory)
        if self.reduction_server is not None:
            check_reduction_server(self.primary, self.workers, self.reduction_server)
        check_tpu_pools({role: pool for role in POOL_ROLES if (pool := getattr(self, role)) is not None})
        if self.scheduling is not None:
            pools = {role: pool for role in POOL_ROLES if (pool := getattr(self, role)) is not None}
            check_reservations(pools, self.reduction_server, self.scheduling.strategy)
            if self.scheduling.strategy == "FLEX_START":
                check_flex_start(pools, self.reduction_server, self.scheduling)
        rule = offered_rule(self.location, self.accelerators())
        if rule is not None:
            fail(rule)
        return self

    def accelerators(self, prefix: str = "") -> list[tuple[str, str | None]]:
        """(field path, accelerator type) of every pool's machine, the paths under ``prefix``."""
        return [
            (f"{prefix}{role}.machine.accelerator_type", pool.machine.accelerator_type)
            for role in POOL_ROLES
            if (pool := getattr(self, role)) is not None
        ]

    def tpu_pools(self, prefix: str = "") -> list[tuple[str, str]]:
        """(field path, TPU machine type or accelerator) of every pool whose machine asks for TPUs."""
        out: list[tuple[str, str]] = []
        for role in POOL_ROLES:
            pool = getattr(self, role)
            if pool is None:
                continue
            machine = pool.machine
            if machine.machine_type in catalog.TPU_MACHINES:
                out.append((f"{prefix}{role}.machine", machine.machine_type))
            elif (machine.accelerator_type or "").startswith("TPU_"):
                out.append((f"{prefix}{role}.machine", str(machine.accelerator_type)))
        return out

    # ---- derived values ----------------------------------------------------------------------

    def reducer_sizing(self) -> ReducerSizing:
        """Bandwidth of pools 0 and 1, of one reducer, and the reducer count that matches."""
        return reducer_sizing(self.primary, self.workers, self.reduction_server)

    @property
    def reducer_count(self) -> int | None:
        """The number of reducers rendered (``"auto"`` resolved), or ``None`` without them."""
        rs = self.reduction_server
        if rs is None:
            return None
        if rs.replica_count == "auto":
            needed = self.reducer_sizing().needed
            assert needed is not None  # guaranteed by validation
            return needed
        return rs.replica_count

    # ---- rendering ---------------------------------------------------------------------------

    def worker_pool_specs(self, *, location: str | None = None) -> list[dict[str, Any]]:
        """Pools at their fixed positions; skipped interior pools are ``{}``, trailing ones dropped."""
        loc = location or self.location
        server: dict[str, Any] = {}
        if self.parameter_servers is not None:
            server = self.parameter_servers.to_api()
        elif self.reduction_server is not None:
            count = self.reducer_count
            assert count is not None
            server = self.reduction_server.to_api(count, loc)
        pools = [
            self.primary.to_api(),
            self.workers.to_api() if self.workers is not None else {},
            server,
            self.evaluators.to_api() if self.evaluators is not None else {},
        ]
        while pools and not pools[-1]:
            pools.pop()
        return pools

    def job_spec_to_api(self, *, location: str | None = None) -> dict[str, Any]:
        """The v1 ``CustomJobSpec`` as REST JSON (also the ``trialJobSpec`` of a tuning job)."""
        spec: dict[str, Any] = {"workerPoolSpecs": self.worker_pool_specs(location=location)}
        if self.scheduling is not None and self.scheduling.to_api():
            spec["scheduling"] = self.scheduling.to_api()
        optional = {
            "serviceAccount": self.service_account,
            "network": self.network,
            "protectedArtifactLocationId": self.protected_artifact_location_id,
            "tensorboard": self.tensorboard,
            "persistentResourceId": self.persistent_resource_id,
            "experiment": self.experiment,
            "experimentRun": self.experiment_run,
        }
        spec.update({k: v for k, v in optional.items() if v is not None})
        if self.reserved_ip_ranges:
            spec["reservedIpRanges"] = list(self.reserved_ip_ranges)
        if self.psc_interface_config is not None and self.psc_interface_config.to_api():
            spec["pscInterfaceConfig"] = self.psc_interface_config.to_api()
        if self.base_output_directory is not None:
            spec["baseOutputDirectory"] = {"outputUriPrefix": self.base_output_directory}
        if self.enable_web_access:
            spec["enableWebAccess"] = True
        if self.enable_dashboard_access:
            spec["enableDashboardAccess"] = True
        if self.models:
            spec["models"] = list(self.models)
        return spec

    def to_api(self, *, location: str | None = None) -> dict[str, Any]:
        """The v1 REST body of a ``CustomJob`` (camelCase), deterministic for a given spec."""
        body: dict[str, Any] = {
            "displayName": self.display_name,
            "jobSpec": self.job_spec_to_api(location=location),
        }
        if self.labels:
            body["labels"] = dict(self.labels)
        if self.encryption_key is not None:
            body["encryptionSpec"] = {"kmsKeyName": self.encryption_key}
        return body

    # ---- parsing -----------------------------------------------------------------------------

    @classmethod
    def from_api(cls, body: Any, *, location: str | None = None) -> "DistributedTrainingJob":
        """Parse a v1 ``CustomJob`` JSON body (camelCase) into the model, applying every rule.

        Output-only fields (name, state, times, error, ...) are ignored; unknown fields are
        rejected. A pool 2 running the Reduction Server image becomes ``reduction_server``
        (with ``allow_undersized=True``: the service does not check sizing). Raises
        ``pydantic.ValidationError``.
        """
        title = cls.__name__
        body = _api.as_dict(title, (), body)
        data: dict[str, Any] = {}
        known = {"displayName", "jobSpec", "labels", "encryptionSpec", *_api.CUSTOM_JOB_OUTPUT_ONLY}
        _api.unknown_keys(body, known, data, cls.model_fields)
        if "displayName" in body:
            data["display_name"] = body["displayName"]
        if not _api.is_unset(body.get("labels")):
            data["labels"] = body["labels"]
        if body.get("encryptionSpec") is not None:
            data["encryption_key"] = _api.kms_key(title, body["encryptionSpec"])
        if location is not None:
            data["location"] = location
        data.update(job_spec_from_api(title, ("job_spec",), body.get("jobSpec"), cls.model_fields))
        return cls.model_validate(data, context=SERVER_CONTEXT)
