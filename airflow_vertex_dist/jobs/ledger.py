"""The cost ledger of a job, a task and a DAG run: GPU-hours, dollars, time queued, time run and time lost
to preemption, read from the job dicts the v1 API returns (camelCase). Pure: no I/O.

The interface (stable; the types are ``jobs.output_types``' ``LedgerEntry`` and ``LedgerTotals``):

- ``ledger_entry(job, rung=None, *, preemptions=None, checkpoints=None)``: one job's ``LedgerEntry``;
  ``rung`` is the name of the ladder's rung it ran on, ``preemptions`` the RFC 3339 times of its
  preemptions (``preemption_times`` reads them from the job's service log lines; ``None``: not read),
  ``checkpoints`` the RFC 3339 times its trainer's checkpoints were written (``None``: not read).
- ``ledger_totals(entries)``: their ``LedgerTotals``; ``by_rung(entries)`` one ``RungLedger`` per rung in
  the order first met; ``by_task(entries)`` the totals per task instance (its ``airflow-run`` label);
  ``task_ledger(entries)`` the ``TaskLedger`` a task returns. A DAG run's totals are ``ledger_totals``
  of the entries of its tasks.
- ``job_usd_per_hour(job)``: the whole job's price per hour from the machine catalog, and its basis.

How each figure is reckoned:

- **GPU-hours**: accelerators of one run of the job (every replica of every pool) x the hours between
  ``startTime`` and ``endTime``; a tuning job's are one trial's accelerators x the sum of its trials'
  hours. TPU chips count as accelerators.
- **USD**: the machine catalog's price per hour (``specs.prices.price_per_hour``: machine and
  accelerators of each replica) times those hours. A SPOT job is priced at the on-demand price, an
  upper bound: the catalog has no Spot price of Vertex AI training, and a Spot VM is sold below
  on-demand ("up to 91% off of the on-demand price",
  https://cloud.google.com/compute/docs/instances/create-use-spot). A FLEX_START job has no price in
  the catalog: ``None``. A job that never ran costs 0 at any price ("You don't pay for the time that
  the job is in a queue or preempted", https://cloud.google.com/vertex-ai/docs/training/use-spot-vms,
  "Billing"). An estimate: the billing export is the bill (docs/how-to/cost.md joins the two).
- **Queued**: ``createTime`` to ``startTime`` (QUEUED and PENDING; to ``endTime`` for a job that never
  started). **Run**: ``startTime`` to ``endTime``.
- **Lost to preemption**: the v1 job carries no preemption count or time. "When Spot VMs are preempted,
  the serverless training job fails with a STOCKOUT error and Compute Engine tries to restart the job up
  to six times" (the Spot page, "Preemption handling"): a restart keeps the job RUNNING, so only its
  log shows it. ``preemption_times`` takes the job's ``service`` log lines that name a preemption
  (``PREEMPTION_RE``; the emulator writes one WARNING line per preemption, and the failed job's error
  again, which is not counted twice; Vertex AI's wording is not documented). Each preemption loses the
  run since the job's start or the previous preemption: what a trainer that does not checkpoint loses,
  an upper bound for one that does. With the times of the checkpoints its trainer wrote (a spec's
  checkpoint contract, ``specs.checkpoints``: the directory's objects), each loses the run since the
  last checkpoint before it instead, when that is later (``jobs.checkpoint_loss``). A SPOT job that
  failed with an error naming a preemption and no such line counts one preemption at its ``endTime``.
  A STANDARD job is not preempted: 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist.jobs.dicts import job_labels, job_spec
from airflow_vertex_dist.jobs.replicas import replica_count

if TYPE_CHECKING:
    from airflow_vertex_dist.jobs.output_types import LedgerEntry, LedgerTotals, RungLedger, TaskLedger

__all__ = [
    "AT_MOST",
    "ON_DEMAND",
    "by_rung",
    "by_task",
    "job_strategy",
    "job_usd_per_hour",
    "ledger_entry",
    "ledger_totals",
    "preemption_times",
    "task_ledger",
]

#: the price basis of a STANDARD job, and of a SPOT job (the on-demand price: an upper bound)
ON_DEMAND = "on-demand"
AT_MOST = "at most (on-demand; no Spot price in the catalog)"
_EXACT = "exact (on-demand)"
_TOTAL_AT_MOST = "at most (a SPOT job priced on-demand)"
_STRATEGIES = {"SPOT": "SPOT", "FLEX_START": "FLEX_START"}  # any other (ON_DEMAND, unspecified): STANDARD
_LABELS = ("airflow-dag", "airflow-task", "airflow-run")  # hooks.labels' DAG_LABEL, TASK_LABEL, RUN_LABEL


def _nanos(value: Any) -> int | None:
    from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos

    if not isinstance(value, str) or not value:
        return None
    try:
        return rfc3339_nanos(value)
    except ValueError:
        return None


def _seconds(start: int | None, end: int | None) -> float | None:
    return None if start is None or end is None else round(max(0, end - start) / 1e9, 3)


def _region(name: str) -> str:
    parts = name.split("/")
    return parts[3] if len(parts) > 3 and parts[2] == "locations" else ""


def job_strategy(job: Mapping[str, Any]) -> str:
    """``STANDARD``, ``SPOT`` or ``FLEX_START``, from the job's ``scheduling.strategy`` (unset,
    ``STRATEGY_UNSPECIFIED`` and the deprecated ``ON_DEMAND``: ``STANDARD``; ``LOW_COST``, which may
    use Spot resources, keeps its name)."""
    raw = str((job_spec(job).get("scheduling") or {}).get("strategy") or "STANDARD")
    return raw if raw == "LOW_COST" else _STRATEGIES.get(raw, "STANDARD")


def _pools(job: Mapping[str, Any]) -> list[tuple[str, str | None, int, int]]:
    """Each used pool's machine type, accelerator type, accelerators per replica and replicas."""
    out = []
    for index, pool in enumerate(job_spec(job).get("workerPoolSpecs") or []):
        if not isinstance(pool, Mapping) or not pool:
            continue  # a skipped pool, kept in place as {}
        machine = pool.get("machineSpec") or {}
        accel = machine.get("acceleratorType") or None
        if accel == "ACCELERATOR_TYPE_UNSPECIFIED":
            accel = None
        count = int(machine.get("acceleratorCount", 1 if accel else 0) or 0) if accel else 0
        replicas = replica_count(pool, field=f"workerPoolSpecs[{index}].replicaCount")
        out.append((str(machine.get("machineType", "")), accel, count, replicas))
    return out


def job_usd_per_hour(job: Mapping[str, Any]) -> tuple[float | None, str]:
    """USD per hour of the whole job while it runs, from the machine catalog (every replica of every
    pool; a tuning job's ``parallelTrialCount`` trials at once), and how it was reckoned: ``ON_DEMAND``,
    or ``AT_MOST`` for SPOT. ``None`` with the reason when a figure is missing (a FLEX_START job, a
    machine the catalog does not price, no region in the job's name)."""
    from airflow_vertex_dist.specs.prices import price_per_hour

    region = _region(str(job.get("name", "")))
    strategy = job_strategy(job)
    if not region:
        return None, "no region"
    if strategy == "FLEX_START":
        return None, "flex-start (no price in the catalog)"
    if strategy not in ("STANDARD", "SPOT"):
        return None, f"{strategy} (no price in the catalog)"
    total = 0.0
    for machine, accel, count, replicas in _pools(job):
        price = price_per_hour(machine, accel, count, region)
        if price is None:
            return None, f"no price for {machine}{f' {count} x {accel}' if accel else ''} in {region}"
        total += price * replicas
    if "trialJobSpec" in job:
        total *= int(job.get("parallelTrialCount") or 1)
    return round(total, 8), AT_MOST if strategy == "SPOT" else ON_DEMAND


def preemption_times(lines: Iterable[tuple[str, str]], job: Mapping[str, Any]) -> list[str]:
    """The times of ``job``'s preemptions, oldest first, from its ``service`` log lines as
    ``(timestamp, text)`` pairs: the lines naming a preemption (``PREEMPTION_RE``), but for the one that
    repeats the job's own ``error.message`` (the same preemption, said again as the job fails)."""
    from airflow_vertex_dist.jobs.capacity_messages import PREEMPTION_RE

    error = job.get("error")
    said = str(error.get("message") or "") if isinstance(error, Mapping) else ""
    found = [
        (stamp, text)
        for stamp, text in lines
        if PREEMPTION_RE.search(text) and not (said and text.strip() == said.strip())
    ]
    return [stamp for stamp, _ in sorted(found, key=lambda pair: _nanos(pair[0]) or 0)]


def _lost(
    job: Mapping[str, Any],
    strategy: str,
    preemptions: Sequence[str] | None,
    checkpoints: Sequence[str] | None = None,
) -> tuple[float | None, int | None, str]:
    """Seconds of run lost to preemption, how many preemptions, and where they were read."""
    from airflow_vertex_dist.jobs.capacity_messages import PREEMPTION_RE

    start, end = _nanos(job.get("startTime")), _nanos(job.get("endTime"))
    if not job_spec(job):
        return None, None, "the job was not read"
    if strategy == "STANDARD":
        return 0.0, 0, "STANDARD: not preemptible"
    if "trialJobSpec" in job:
        return None, None, "not read for a tuning job's trials"
    if start is None:
        return (0.0, 0, "never ran") if end is not None else (None, None, "not started")
    if preemptions is None:
        return None, None, "the job's log was not read"
    times = sorted(t for t in (_nanos(p) for p in preemptions) if t is not None and t >= start)
    basis = "the job's service log"
    error = job.get("error")
    text = str(error.get("message") or "") if isinstance(error, Mapping) else ""
    if not times and end is not None and text and PREEMPTION_RE.search(text):
        times, basis = [end], "its error names a preemption: one, at its end"
    from airflow_vertex_dist.jobs.checkpoint_loss import preemption_losses

    written = None if checkpoints is None else [t for t in (_nanos(c) for c in checkpoints) if t is not None]
    if written is not None and times:
        basis += " and its checkpoints"
    losses = preemption_losses(start, times, written)
    return round(sum(loss.lost_s for loss in losses), 3), len(times), basis


def _accelerators(job: Mapping[str, Any]) -> tuple[str | None, int, int]:
    pools = _pools(job)
    types = sorted({accel for _, accel, count, _ in pools if accel and count})
    accelerators = sum(count * replicas for _, _, count, replicas in pools)
    return ("+".join(types) or None), accelerators, sum(replicas for *_, replicas in pools)


def _span_hours(item: Mapping[str, Any]) -> float | None:
    """``startTime`` to ``endTime`` in hours: 0 for an item that ended without starting, ``None`` for
    one that has not ended (or a time that does not parse)."""
    end = _nanos(item.get("endTime"))
    if end is None:
        return None
    if not item.get("startTime"):
        return 0.0
    run = _seconds(_nanos(item.get("startTime")), end)
    return None if run is None else run / 3600


def _hours_run(job: Mapping[str, Any]) -> float | None:
    """Hours the job's machines ran: its own, or for a tuning job the sum of its trials'; ``None``
    until the job (and each of its trials) ended."""
    if not job.get("endTime"):
        return None
    if "trialJobSpec" not in job:
        return _span_hours(job)
    trials = job.get("trials")
    spans = [_span_hours(t) for t in (trials if isinstance(trials, list) else []) if isinstance(t, Mapping)]
    return None if any(s is None for s in spans) else sum(s or 0.0 for s in spans)


def ledger_entry(
    job: Mapping[str, Any],
    rung: str | None = None,
    *,
    preemptions: Sequence[str] | None = None,
    checkpoints: Sequence[str] | None = None,
) -> LedgerEntry:
    """The ledger entry of ``job`` (see the module doc): ``rung`` names the ladder's rung it ran on,
    ``preemptions`` are the RFC 3339 times of its preemptions (``None``: its log was not read),
    ``checkpoints`` the times its trainer's checkpoints were written (``None``: not read)."""
    name = str(job.get("name", ""))
    parts = name.split("/")
    labels = job_labels(job)
    strategy = job_strategy(job)
    accel, accelerators, replicas = _accelerators(job)
    created, start, end = (
        _nanos(job.get("createTime")),
        _nanos(job.get("startTime")),
        _nanos(job.get("endTime")),
    )
    hours = _hours_run(job)
    price, basis = job_usd_per_hour(job)
    if "trialJobSpec" in job and price is not None:
        price /= max(1, int(job.get("parallelTrialCount") or 1))  # the hours are each trial's
    usd = None if hours is None or (price is None and hours > 0) else round((price or 0.0) * hours, 6)
    lost, preempted, lost_basis = _lost(job, strategy, preemptions, checkpoints)
    return {
        "job": name,
        "kind": parts[-2] if len(parts) >= 2 else "",
        "state": job.get("state"),
        "rung": rung,
        "region": _region(name),
        "dag": labels.get(_LABELS[0]),
        "task": labels.get(_LABELS[1]),
        "run": labels.get(_LABELS[2]),
        "strategy": strategy,
        "accelerator_type": accel,
        "accelerators": accelerators,
        "replicas": replicas,
        "gpu_hours": None if hours is None else round(accelerators * hours, 6),
        "usd": usd,
        "usd_basis": "never ran" if hours == 0 else basis,
        "queued_seconds": _seconds(created, start if start is not None else end),
        "run_seconds": None if end is None else 0.0 if start is None else _seconds(start, end),
        "preempted_seconds": lost,
        "preemptions": preempted,
        "preemption_basis": lost_basis,
    }


def _sum(values: Iterable[float | None], digits: int) -> float | None:
    items = list(values)
    return None if any(v is None for v in items) else round(sum(v or 0.0 for v in items), digits)


def ledger_totals(entries: Iterable[LedgerEntry]) -> LedgerTotals:
    """The sums of ``entries`` (each ``None`` when any entry's figure is unknown)."""
    items = list(entries)
    counts = [e["preemptions"] for e in items]
    upper = any(e["usd_basis"] == AT_MOST and e["usd"] for e in items)
    return {
        "jobs": len(items),
        "gpu_hours": _sum((e["gpu_hours"] for e in items), 6),
        "usd": _sum((e["usd"] for e in items), 6),
        "usd_basis": _TOTAL_AT_MOST if upper else _EXACT,
        "queued_seconds": _sum((e["queued_seconds"] for e in items), 3),
        "run_seconds": _sum((e["run_seconds"] for e in items), 3),
        "preempted_seconds": _sum((e["preempted_seconds"] for e in items), 3),
        "preemptions": None if any(c is None for c in counts) else sum(c or 0 for c in counts),
    }


def by_rung(entries: Iterable[LedgerEntry]) -> list[RungLedger]:
    """The totals of each rung, in the order its first job appears (``rung`` ``None``: no ladder)."""
    groups: dict[str | None, list[LedgerEntry]] = {}
    for entry in entries:
        groups.setdefault(entry["rung"], []).append(entry)
    return [{"rung": rung, "totals": ledger_totals(group)} for rung, group in groups.items()]


def by_task(entries: Iterable[LedgerEntry]) -> dict[str, LedgerTotals]:
    """The totals of each task instance, keyed by its ``airflow-run`` label (``""``: none)."""
    groups: dict[str, list[LedgerEntry]] = {}
    for entry in entries:
        groups.setdefault(entry["run"] or "", []).append(entry)
    return {run: ledger_totals(group) for run, group in groups.items()}


def task_ledger(entries: Iterable[LedgerEntry]) -> TaskLedger:
    """A task's ledger: its jobs, in order, their totals by rung, and the task's totals."""
    items = list(entries)
    return {"jobs": items, "by_rung": by_rung(items), "totals": ledger_totals(items)}
