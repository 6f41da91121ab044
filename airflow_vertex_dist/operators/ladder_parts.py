"""The parts of a capacity ladder's walk that hold no Airflow: its state across a deferral
(``LadderState``), the tables the task log shows (``prices_table``, ``ladder_table``) and what a rung's
plan and job say (region, strategy, machines, price, pending limit, seconds)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_vertex_dist.jobs.output_types import LadderStep, RungOutput
    from airflow_vertex_dist.specs.capacity import RungPlan

__all__ = [
    "rung_output_of",
    "LadderState",
    "ladder_table",
    "machines_of",
    "pending_limit_s",
    "price_text",
    "prices_table",
    "region_of",
    "rung_job_line",
    "rung_seconds",
    "strategy_of",
]


class LadderState:
    """What a walk remembers across a deferral: the rungs left (``steps``), the retries used per
    rung, and the seconds a rung on a persistent resource waited for it (``waited``: taken off the
    rung's ``pending_limit`` for its job, ``plan_of``); plain JSON both ways (``to_json`` /
    ``from_json``) for the deferral's ``next_kwargs``."""

    def __init__(
        self,
        steps: list[LadderStep] | None = None,
        retries: dict[int, int] | None = None,
        waited: dict[int, float] | None = None,
    ) -> None:
        self.steps: list[LadderStep] = list(steps or [])
        self.retries: dict[int, int] = dict(retries or {})
        self.waited: dict[int, float] = dict(waited or {})

    def to_json(self) -> dict[str, Any]:
        out = {"steps": list(self.steps), "retries": {str(k): v for k, v in self.retries.items()}}
        if self.waited:
            out["waited"] = {str(k): v for k, v in self.waited.items()}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> LadderState:
        data = data or {}
        retries = {int(k): int(v) for k, v in (data.get("retries") or {}).items()}
        waited = {int(k): float(v) for k, v in (data.get("waited") or {}).items()}
        return cls(list(data.get("steps") or []), retries, waited)

    def plan_of(self, plans: Sequence[RungPlan], number: int) -> RungPlan:
        """Rung ``number``'s plan, its ``pending_limit`` less the seconds it waited for its persistent
        resource (at least a millisecond: a limit spent on the resource ends the job's wait at once)."""
        from datetime import timedelta

        plan = plans[number - 1]
        waited, limit = self.waited.get(number, 0.0), plan.rung.pending_limit
        if not waited or limit is None:
            return plan
        left = max(limit - timedelta(seconds=waited), timedelta(milliseconds=1))
        return plan._replace(rung=plan.rung.model_copy(update={"pending_limit": left}))


def region_of(plan: RungPlan, default: str) -> str:
    return plan.region or default


def strategy_of(plan: RungPlan) -> str | None:
    job = getattr(plan.spec, "trial_job", plan.spec)
    return job.scheduling.strategy if job.scheduling is not None else None


def rung_output_of(plan: RungPlan, of: int, region: str, left: Sequence[LadderStep] | None) -> RungOutput:
    """The XCom return value's ``rung``: the rung the job ran on (number ``of`` the ladder's rungs) and
    the rungs ``left`` before it."""
    return {
        "number": plan.number,
        "of": of,
        "name": plan.name,
        "region": region,
        "strategy": strategy_of(plan),
        "usd_per_hour": plan.usd_per_hour,
        "left": list(left or []),
    }


def machines_of(plan: RungPlan) -> str:
    job = getattr(plan.spec, "trial_job", plan.spec)
    parts = []
    for role in ("primary", "workers", "parameter_servers", "evaluators"):
        pool = getattr(job, role)
        if pool is not None:
            m = pool.machine
            gpus = f" {m.accelerator_count}x{m.accelerator_type}" if m.accelerator_type else ""
            parts.append(f"{pool.replica_count}x {m.machine_type}{gpus}")
    return ", ".join(parts)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def price_text(plan: RungPlan) -> str:
    if plan.usd_per_hour is None:
        return f"? ({plan.price_basis})"
    return f"{plan.usd_per_hour:.2f} ({plan.price_basis})"


def prices_table(plans: Sequence[RungPlan], default_region: str) -> str:
    """The rungs as a table: number, name, region, strategy, machines, GPUs, price per hour (USD)."""
    rows = [
        (
            str(p.number),
            p.name,
            region_of(p, default_region),
            strategy_of(p) or "STANDARD",
            machines_of(p),
            str(p.gpus),
            price_text(p),
        )
        for p in plans
    ]
    return _table(("rung", "name", "region", "strategy", "machines", "GPUs", "USD/hour"), rows)


def ladder_table(steps: Sequence[LadderStep]) -> str:
    """The rungs left: number, name, region, job, why it was left, seconds."""
    rows = [
        (
            str(s["rung"]),
            s["name"],
            s["region"],
            (s["job"] or "-").rsplit("/", 1)[-1],
            f"{s['outcome']}: {s['reason']}"[:200],
            f"{s['seconds']:.0f}",
        )
        for s in steps
    ]
    return _table(("rung", "name", "region", "job", "left because", "seconds"), rows)


def pending_limit_s(plan: RungPlan) -> float | None:
    limit = plan.rung.pending_limit
    return None if limit is None else limit.total_seconds()


def rung_seconds(job: Mapping[str, Any], now_ns: int | None = None) -> float:
    """From the job's creation to its end (or ``now_ns``, the service's time now: by default this
    host's)."""
    from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos

    created, ended = job.get("createTime"), job.get("endTime")
    if not created:
        return 0.0
    try:
        end = rfc3339_nanos(str(ended)) if ended else (time.time_ns() if now_ns is None else now_ns)
        return max(0.0, (end - rfc3339_nanos(str(created))) / 1e9)
    except ValueError:
        return 0.0


def rung_job_line(plan: RungPlan, rungs: int, job: Mapping[str, Any]) -> str:
    """What the task log says of the rung's job as the walk takes it up: that it runs, or -- a job
    that ended before (a resumed task's) -- how it ended and why, at once."""
    from airflow_vertex_dist.jobs.dicts import error_suffix, job_state, short_state
    from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES

    where = f"Rung {plan.number}/{rungs} ({plan.name})"
    state = job_state(job)
    if state in TERMINAL_STATES:
        return f"{where}: job {job['name']} already ended: {short_state(state)}{error_suffix(job)}"
    return f"{where} runs {job['name']}"
