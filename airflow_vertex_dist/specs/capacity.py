"""A capacity ladder: the ordered rungs a training or tuning task may run its job on when capacity is
short, each priced, each validated as a whole spec when the task is built.

A ``Rung`` overrides what it names of the task's spec and nothing else: the machine of the primary
and workers (``machine``) or of any pool (``pools``: machine type, accelerators, replica count,
reservation affinity), the scheduling strategy and ``max_wait_duration``, and the region (one of the
ladder's ``regions``: an explicit allow-list). Its ``pending_limit`` ends the wait for a job that has
not started (a stockout that shows as a job left QUEUED or PENDING); ``on_stockout``, ``on_quota``,
``on_flex_not_granted`` and ``on_preemption`` say what each capacity failure does: ``"next"`` (the
next rung) or ``"retry"`` (this rung again, after ``retry_backoff``, at most ``retries`` times, then
the next rung).

A rung with ``persistent_resource`` (``airflow_vertex_dist.specs.persistent.PersistentResourceUse``)
runs its job on that persistent resource (the job's ``persistent_resource_id``); ``plan_ladder`` checks
that the job's pools fit the resource's (``fit_errors``).

The checkpoint contract (``airflow_vertex_dist.specs.checkpoints``): a rung whose job runs SPOT or
FLEX_START, on a spec that does not say how its trainer checkpoints (``checkpoints`` unset; a tuning
job's ``trial_job.checkpoints``), is refused unless the rung sets ``accepts_restarts_from_zero=True``:
a preempted job restarts, and a trainer that does not resume from a checkpoint burns the hours before.

``plan_ladder`` applies every rung to the spec and validates the result with every rule of the spec
model, so a rung that makes a bad spec fails when the task is built, named by its path:
``capacity.rungs[1].pools.primary: ...``. It prices each rung (``airflow_vertex_dist.specs.prices``)
and refuses a rung above ``max_price_per_hour``.
"""

# No ``from __future__ import annotations`` in the modules that define spec models (see job.py).

from datetime import timedelta
from typing import Any, Literal, NamedTuple

from pydantic import Field, ValidationError, field_validator, model_validator
from typing_extensions import Self

from airflow_vertex_dist.specs._base import RENDERED_CONTEXT, Duration, SpecModel, fail
from airflow_vertex_dist.specs._catalog_rules import default_boot_disk_type
from airflow_vertex_dist.specs.cluster import POOL_ROLES
from airflow_vertex_dist.specs.errors import error_lines
from airflow_vertex_dist.specs.job import DistributedTrainingJob
from airflow_vertex_dist.specs.machine import AcceleratorType, ReservationAffinity
from airflow_vertex_dist.specs.persistent import PersistentResourceUse, fit_errors
from airflow_vertex_dist.specs.tuning import HyperparameterTuningJob

__all__ = [
    "CapacityLadder",
    "LadderError",
    "MachineOverride",
    "PoolOverride",
    "Rung",
    "RungPlan",
    "gpu_count",
    "plan_ladder",
    "spec_price_per_hour",
]

Action = Literal["next", "retry"]
Strategy = Literal["STANDARD", "SPOT", "FLEX_START"]
Role = Literal["primary", "workers", "parameter_servers", "evaluators"]
JobSpec = DistributedTrainingJob | HyperparameterTuningJob

_MAX_RUNGS = 20


class LadderError(ValueError):
    """A ladder that cannot run: the message names the rung and the field."""


class MachineOverride(SpecModel):
    """What a rung changes in a pool's machine; a field left ``None`` keeps the spec's."""

    machine_type: str | None = None
    accelerator_type: AcceleratorType | None = None
    accelerator_count: int | None = Field(default=None, ge=0, le=2**31 - 1)
    reservation_affinity: ReservationAffinity | None = None

    def apply(self, machine: dict[str, Any]) -> dict[str, Any]:
        out = dict(machine)
        for name in ("machine_type", "accelerator_type", "accelerator_count", "reservation_affinity"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


class PoolOverride(MachineOverride):
    """A pool's machine override and, optionally, its replica count."""

    replica_count: int | None = Field(default=None, ge=1, le=2**31 - 1)


class Rung(SpecModel):
    """One way to run the job; see the module doc. ``name`` labels it in the task log and the tables
    (default ``rung <n>``)."""

    name: str | None = None
    region: str | None = None
    machine: MachineOverride | None = None
    pools: dict[Role, PoolOverride] = Field(default_factory=dict)
    strategy: Strategy | None = None
    max_wait_duration: Duration | None = None
    pending_limit: Duration | None = None
    on_stockout: Action = "next"
    on_quota: Action = "next"
    on_flex_not_granted: Action = "next"
    on_preemption: Action = "retry"
    retries: int = Field(default=1, ge=0, le=100)
    retry_backoff: Duration = timedelta(seconds=60)
    persistent_resource: PersistentResourceUse | None = None
    accepts_restarts_from_zero: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or len(value) > 63):
            fail(f"name: 1-63 characters, not blank (got {value!r})")
        return value

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.pending_limit is not None and self.pending_limit <= timedelta(0):
            fail(
                "pending_limit: must be positive; leave it unset to wait for the job to start without a limit"
            )
        if self.retry_backoff < timedelta(0):
            fail("retry_backoff: must not be negative")
        if self.max_wait_duration is not None and self.strategy not in ("FLEX_START", None):
            fail(
                f"max_wait_duration: only applies to strategy FLEX_START (got {self.strategy}); set "
                "strategy='FLEX_START', or drop max_wait_duration"
            )
        if self.accepts_restarts_from_zero and self.strategy == "STANDARD":
            fail(
                "accepts_restarts_from_zero: only applies to a SPOT or FLEX_START rung (got strategy "
                "STANDARD); drop it"
            )
        return self

    def action(self, kind: str) -> Action:
        """What this rung does on a capacity failure of class ``kind``."""
        return {
            "stockout": self.on_stockout,
            "quota": self.on_quota,
            "flex-start not granted": self.on_flex_not_granted,
            "preemption": self.on_preemption,
        }.get(kind, "next")


class CapacityLadder(SpecModel):
    """The rungs in order, the regions a rung may name, and an optional price ceiling per hour (USD)."""

    rungs: tuple[Rung, ...]
    regions: tuple[str, ...] = ()
    max_price_per_hour: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not 1 <= len(self.rungs) <= _MAX_RUNGS:
            fail(f"rungs: give 1 to {_MAX_RUNGS} rungs (got {len(self.rungs)})")
        for index, rung in enumerate(self.rungs):
            if rung.region is not None and rung.region not in self.regions:
                allowed = ", ".join(self.regions) if self.regions else "none"
                fail(
                    f"rungs[{index}].region: {rung.region!r} is not in regions (allowed: {allowed}); add it "
                    "to regions, the explicit list of regions the ladder may create jobs in"
                )
        names = [rung.name for rung in self.rungs if rung.name is not None]
        if len(names) != len(set(names)):
            fail("rungs: every rung's name must be different")
        return self


class RungPlan(NamedTuple):
    """A rung applied to a spec: its 1-based ``number``, name, region (``None``: the connection's), the
    whole spec it runs, its price per hour (``None``: unknown), how that price was reckoned, and its GPUs."""

    number: int
    name: str
    rung: Rung
    region: str | None
    spec: Any
    usd_per_hour: float | None
    price_basis: str
    gpus: int


def _trial(spec: JobSpec) -> DistributedTrainingJob:
    return spec.trial_job if isinstance(spec, HyperparameterTuningJob) else spec


def gpu_count(spec: JobSpec) -> int:
    """The GPUs the job holds at once: every pool's replicas times its GPUs (a tuning job: times
    ``parallel_trial_count``)."""
    from airflow_vertex_dist._generated import catalog
    from airflow_vertex_dist.specs.machine import GPU_TYPES

    job = _trial(spec)
    total = 0
    for role in POOL_ROLES:
        pool = getattr(job, role)
        if pool is None:
            continue
        machine = pool.machine
        if machine.accelerator_type in GPU_TYPES:
            count = machine.accelerator_count
        elif machine.accelerator_type is None and machine.machine_type in catalog.BUILT_IN:
            count = catalog.BUILT_IN[machine.machine_type][1]
        else:
            count = 0
        total += count * pool.replica_count
    if isinstance(spec, HyperparameterTuningJob):
        total *= spec.parallel_trial_count
    return total


def spec_price_per_hour(spec: JobSpec, location: str | None) -> tuple[float | None, str]:
    """USD per hour of the whole job while it runs (every replica of every pool; a tuning job's
    ``parallel_trial_count`` trials at once), and how it was reckoned: ``on-demand``, or for SPOT ``at
    most (on-demand)``: the catalog has no Spot price of Vertex AI training, and a Spot VM is sold below
    the on-demand price. ``None`` when a figure is missing (a FLEX_START price, a machine the catalog
    does not price, no region)."""
    from airflow_vertex_dist.specs.prices import price_per_hour

    job = _trial(spec)
    region = location or getattr(spec, "location", None) or job.location
    strategy = job.scheduling.strategy if job.scheduling is not None else None
    if region is None:
        return None, "no region"
    if strategy == "FLEX_START":
        return None, "flex-start (no price in the catalog)"
    total = 0.0
    for role in POOL_ROLES:
        pool = getattr(job, role)
        if pool is None:
            continue
        m = pool.machine
        price = price_per_hour(m.machine_type, m.accelerator_type, m.accelerator_count, region)
        if price is None:
            return None, f"no price for {m.machine_type} {m.describe_accelerators()} in {region}"
        total += price * pool.replica_count
    if job.reduction_server is not None:
        price = price_per_hour(job.reduction_server.machine_type, None, 0, region)
        if price is None:
            return None, f"no price for {job.reduction_server.machine_type} in {region}"
        total += price * (job.reducer_count or 0)
    if isinstance(spec, HyperparameterTuningJob):
        total *= spec.parallel_trial_count
    basis = "at most (on-demand; no Spot price in the catalog)" if strategy == "SPOT" else "on-demand"
    return round(total, 8), basis


def _apply(spec: JobSpec, rung: Rung, rendered: bool) -> JobSpec:
    """``spec`` with ``rung``'s overrides, validated with every rule of its model."""
    tuning = isinstance(spec, HyperparameterTuningJob)
    data: dict[str, Any] = spec.model_dump()
    job: dict[str, Any] = data["trial_job"] if tuning else data
    for role in POOL_ROLES:
        pool = job.get(role)
        overrides: list[MachineOverride] = []
        if rung.machine is not None and role in ("primary", "workers") and pool is not None:
            overrides.append(rung.machine)  # the training pools the spec has
        if role in rung.pools:
            overrides.append(rung.pools[role])
        if not overrides:
            continue
        if pool is None:
            raise LadderError(f"pools.{role}: the spec has no {role} pool to override")
        old_type = pool["machine"]["machine_type"]
        for override in overrides:
            pool["machine"] = override.apply(pool["machine"])
            if isinstance(override, PoolOverride) and override.replica_count is not None:
                pool["replica_count"] = override.replica_count
        disk = pool.get("disk") or {}
        if disk.get("boot_disk_type") == default_boot_disk_type(old_type):  # the old series' default
            pool["disk"] = {**disk, "boot_disk_type": None}  # the new machine's series default
    if rung.strategy is not None or rung.max_wait_duration is not None:
        scheduling = dict(job.get("scheduling") or {})
        if rung.strategy is not None:
            scheduling["strategy"] = rung.strategy
            if rung.strategy != "FLEX_START" and rung.max_wait_duration is None:
                scheduling.pop("max_wait_duration", None)
        if rung.max_wait_duration is not None:
            scheduling["max_wait_duration"] = rung.max_wait_duration
        job["scheduling"] = scheduling
    if rung.region is not None:
        data["location"] = rung.region
        if tuning:
            job["location"] = None
    job.update(_resource_fields(rung))
    model = type(spec)
    return _fits(model.model_validate(data, context=RENDERED_CONTEXT if rendered else None), rung)


def _resource_fields(rung: Rung) -> dict[str, Any]:
    """The job fields a rung on a persistent resource sets: the resource's id."""
    use = rung.persistent_resource
    return {} if use is None else {"persistent_resource_id": use.resource.resource_id}


def _fits(applied: JobSpec, rung: Rung) -> JobSpec:
    """``applied``, unless its pools do not fit the rung's persistent resource (``LadderError``)."""
    use = rung.persistent_resource
    errors = [] if use is None else fit_errors(_trial(applied), use.resource.resource_id, use.resource.shapes)
    if errors:
        lines = "\n".join("  " + error for error in errors)
        raise LadderError(f"persistent_resource: the job does not fit the resource:\n{lines}")
    return applied


def _restart_rule(spec: JobSpec, rung: Rung) -> str | None:
    """Why the rung is refused by the checkpoint contract (see the module doc), or ``None``."""
    job = _trial(spec)
    strategy = job.scheduling.strategy if job.scheduling is not None else None
    if (
        strategy not in ("SPOT", "FLEX_START")
        or job.checkpoints is not None
        or rung.accepts_restarts_from_zero
    ):
        return None
    field = "trial_job.checkpoints" if isinstance(spec, HyperparameterTuningJob) else "checkpoints"
    return (
        f"strategy {strategy} on a spec whose trainer does not checkpoint ({field} unset): a preempted job "
        "restarts from zero. Set the spec's checkpoints=Checkpoints() (the trainer resumes from "
        "AIP_CHECKPOINT_DIR, or Checkpoints(directory=...)), or accepts_restarts_from_zero=True on the rung"
    )


def plan_ladder(
    spec: JobSpec,
    ladder: CapacityLadder,
    *,
    location: str | None = None,
    rendered: bool = False,
    root: str = "capacity",
) -> list[RungPlan]:
    """Every rung applied to ``spec``, validated and priced; ``LadderError`` names the first rung that
    makes a bad spec (``capacity.rungs[<i>]``, 0-based as in the list, with its name) and every rule it
    breaks, or that is priced above ``max_price_per_hour`` (a rung whose price is unknown is refused
    too when there is a ceiling: an unknown price is never taken as within it). A rung whose region is
    not known yet (no rung region, no ``location``: the connection's, read when the task runs) is priced
    and checked against the ceiling then, before any job is created."""
    plans: list[RungPlan] = []
    for index, rung in enumerate(ladder.rungs):
        where = f"{root}.rungs[{index}]" + (f" ({rung.name})" if rung.name else "")
        try:
            applied = _apply(spec, rung, rendered)
        except LadderError as exc:
            raise LadderError(f"{where}.{exc}") from None
        except ValidationError as exc:
            lines = error_lines(exc, root="spec", model=type(spec))
            raise LadderError(
                f"{where}: the rung makes an invalid spec:\n" + "\n".join("  " + line for line in lines)
            ) from None
        refused = _restart_rule(applied, rung)
        if refused is not None:
            raise LadderError(f"{where}: {refused}")
        region = rung.region or location
        price, basis = spec_price_per_hour(applied, region)
        ceiling = ladder.max_price_per_hour
        if ceiling is not None and region is not None and (price is None or price > ceiling):
            got = f"{price:g} USD/hour ({basis})" if price is not None else f"an unknown price ({basis})"
            raise LadderError(
                f"{where}: {got} is above max_price_per_hour={ceiling:g}; drop the rung, choose smaller "
                "machines, or raise the ceiling"
            )
        plans.append(
            RungPlan(
                number=index + 1,
                name=rung.name or f"rung {index + 1}",
                rung=rung,
                region=rung.region,
                spec=applied,
                usd_per_hour=price,
                price_basis=basis,
                gpus=gpu_count(applied),
            )
        )
    return plans
