"""What each preemption of a job cost its trainer: the time between the last checkpoint it could resume
from and the preemption. Pure: no I/O (the times come from the job, its service log and the checkpoint
directory's objects).

A run of the job begins at its ``startTime`` or at the restart after a preemption; a preemption at ``P``
loses the run since the newest of: the last checkpoint written before ``P``, the previous preemption
(the restart resumed from a checkpoint written before it, so the run since the restart is lost), the
job's start. With no checkpoint times at all (``None``: the spec names no checkpoint directory, or it
could not be read) a preemption loses the run since the previous preemption or the start: the ledger's
upper bound (``jobs.ledger``). The restart's own provisioning after a preemption is counted in neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

__all__ = ["PreemptionLoss", "Since", "preemption_losses"]

#: what a preemption's lost time is counted from
Since = Literal["checkpoint", "previous preemption", "job start"]


class PreemptionLoss(NamedTuple):
    """One preemption: when (ns since the epoch), the checkpoint written last before it (``None``:
    none), what the lost time is counted from and since when (ns), and the seconds lost."""

    preempted_ns: int
    checkpoint_ns: int | None
    since: Since
    since_ns: int
    lost_s: float


def preemption_losses(
    start_ns: int, preemptions_ns: Sequence[int], checkpoints_ns: Sequence[int] | None
) -> list[PreemptionLoss]:
    """The loss of each preemption after ``start_ns``, oldest first (see the module doc)."""
    checkpoints = sorted(checkpoints_ns or ())
    out: list[PreemptionLoss] = []
    since_ns, since = start_ns, "job start"
    for when in sorted(p for p in preemptions_ns if p >= start_ns):
        written = [c for c in checkpoints if c <= when]
        last = written[-1] if written else None
        if last is not None and last > since_ns:
            base, kind = last, "checkpoint"
        else:
            base, kind = since_ns, since
        out.append(PreemptionLoss(when, last, kind, base, round(max(0, when - base) / 1e9, 3)))  # type: ignore[arg-type]
        since_ns, since = when, "previous preemption"
    return out
