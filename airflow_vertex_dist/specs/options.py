"""Job options outside the pools: scheduling (v1 ``Scheduling``) and the Private Service Connect
interface (v1 ``PscInterfaceConfig``)."""

# No ``from __future__ import annotations`` in the modules that define spec models, unlike the rest of
# the package: with it, pydantic compiles and evaluates every field's annotation string when the model
# classes are created, on every DAG parse -- about a fifth of this package's parse cost (some 20 M of
# 115 M instructions for the benchmark's DAG file). Forward references are quoted instead.

from datetime import timedelta
from typing import Any, Literal

from pydantic import ValidationInfo, field_validator, model_validator
from typing_extensions import Self  # typing.Self is Python 3.11+; the package supports 3.10

from airflow_vertex_dist.common.durations import duration_to_api
from airflow_vertex_dist.specs._base import Duration, SpecModel, fail
from airflow_vertex_dist.specs._checks import nonblank

__all__ = ["DnsPeeringConfig", "PscInterfaceConfig", "Scheduling"]


class Scheduling(SpecModel):
    """Queuing and scheduling options (v1 ``Scheduling``).

    ``strategy``: STANDARD, SPOT or FLEX_START (the deprecated ON_DEMAND and LOW_COST are
    refused in specs, but accepted by ``from_api`` as the service does). ``max_wait_duration``
    only applies to FLEX_START (v1 ``Scheduling``: "If set to 0, the job will wait indefinitely. The
    default is 24 hours."); ``from_api`` takes it with any strategy, as the service does, and a spec
    written in Python may set a non-zero one only with FLEX_START. A task in a scheduled DAG whose
    FLEX_START wait is 0 warns when the DAG file is parsed (``VertexJobOperator``).
    """

    timeout: Duration | None = None
    restart_job_on_worker_restart: bool = False
    strategy: Literal["STANDARD", "SPOT", "FLEX_START", "ON_DEMAND", "LOW_COST"] | None = None
    disable_retries: bool = False
    max_wait_duration: Duration | None = None

    @field_validator("strategy")
    @classmethod
    def _deprecated(cls, value: str | None, info: ValidationInfo) -> str | None:
        # The service still takes the deprecated values (from_api validates with server=True).
        server = isinstance(info.context, dict) and bool(info.context.get("server"))
        if value in ("ON_DEMAND", "LOW_COST") and not server:
            fail(f"strategy: {value} is deprecated; use STANDARD or SPOT")
        return value

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> Self:
        if self.timeout is not None and self.timeout <= timedelta(0):
            fail(
                f"timeout: must be positive (got {duration_to_api(self.timeout)}); give a duration such as "
                "'86400s'"
            )
        if self.max_wait_duration is not None:
            if self.max_wait_duration < timedelta(0):
                fail(
                    "max_wait_duration: must not be negative (got "
                    f"{duration_to_api(self.max_wait_duration)}); "
                    "give 0s or more"
                )
            # The service takes it with any strategy and applies it only to FLEX_START ("0s" means wait
            # indefinitely); a spec written in Python is told when a non-zero wait would do nothing.
            server = isinstance(info.context, dict) and bool(info.context.get("server"))
            if self.strategy != "FLEX_START" and self.max_wait_duration and not server:
                fail(
                    f"max_wait_duration: only applies to strategy FLEX_START (got {self.strategy}); set "
                    "strategy='FLEX_START', or drop max_wait_duration"
                )
        return self

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.timeout is not None:
            out["timeout"] = duration_to_api(self.timeout)
        if self.restart_job_on_worker_restart:
            out["restartJobOnWorkerRestart"] = True
        if self.strategy is not None:
            out["strategy"] = self.strategy
        if self.disable_retries:
            out["disableRetries"] = True
        if self.max_wait_duration is not None:
            out["maxWaitDuration"] = duration_to_api(self.max_wait_duration)
        return out


class DnsPeeringConfig(SpecModel):
    domain: str
    target_project: str
    target_network: str

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.domain.endswith("."):
            fail(f"domain: DNS name suffix must end with a dot (got {self.domain!r}); add the trailing '.'")
        nonblank("target_project", self.target_project)
        nonblank("target_network", self.target_network)
        return self

    def to_api(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "targetProject": self.target_project,
            "targetNetwork": self.target_network,
        }


class PscInterfaceConfig(SpecModel):
    """Private Service Connect interface (PSC-I) configuration."""

    network_attachment: str | None = None
    dns_peering_configs: tuple[DnsPeeringConfig, ...] = ()

    @field_validator("network_attachment")
    @classmethod
    def _attachment(cls, value: str | None) -> str | None:
        return None if value is None else nonblank("network_attachment", value)

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.network_attachment is not None:
            out["networkAttachment"] = self.network_attachment
        if self.dns_peering_configs:
            out["dnsPeeringConfigs"] = [d.to_api() for d in self.dns_peering_configs]
        return out
