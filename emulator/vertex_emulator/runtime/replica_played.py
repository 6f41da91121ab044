"""A CustomJob *played* from a scenario's ``job_outcome`` rule (core/outcomes.py) instead of run: no
replica process starts; the primary replica "writes" the rule's log lines (its plain log and the
structured log the Logging API serves), the job stays RUNNING for the rule's duration in service
seconds (core/clock.py; a cancel ends it as it ends any job), then ends as the rule says. An exit
status is worded as the emulator words a replica's exit (replica_slots.failure_message).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from vertex_emulator.core.outcomes import PlayedOutcome
from vertex_emulator.runtime.log_records import records_path
from vertex_emulator.runtime.replica_output import RecordLog
from vertex_emulator.runtime.replica_slots import Slot, failure_message

__all__ = ["PLAYED", "PlayedJob", "play"]

#: a played replica's state while its job runs (``replicas.json``: no pid, no process)
PLAYED = "PLAYED"


class PlayedJob(Protocol):
    """What ``play`` needs of the job's driver (runtime/custom_job.py)."""

    @property
    def slots(self) -> Mapping[str, Slot]: ...

    def wait_phase(self, seconds: float) -> bool: ...

    def finish(self, state: str, code: int | None = None, message: str | None = None) -> None: ...


def _write_lines(slot: Slot, lines: tuple[str, ...]) -> None:
    if not lines:
        return
    slot.log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(slot.log_path, "a", encoding="utf-8") as fh:
        fh.write("".join(f"{line}\n" for line in lines))
    records = RecordLog(str(records_path(slot.log_path.parent, slot.replica.key)))
    try:
        records.append("stdout", list(lines))
    finally:
        records.close()


def play(job: PlayedJob, outcome: PlayedOutcome, persist: Callable[[], None], tail_lines: int) -> None:
    """Play ``job`` (its replicas' slots prepared, the job RUNNING) to ``outcome``."""
    slots = list(job.slots.values())
    primary = next((s for s in slots if s.replica.is_primary), slots[0] if slots else None)
    for slot in slots:
        slot.state = PLAYED
    persist()
    if primary is not None:
        _write_lines(primary, outcome.log_lines)
    if job.wait_phase(outcome.after_s):
        return  # cancelled (or the emulator closes)
    status = 0 if outcome.state == "SUCCEEDED" else outcome.exit_status
    for slot in slots:
        if slot is primary and outcome.state != "CANCELLED":
            slot.state, slot.exit_code = ("SUCCEEDED" if status == 0 else "FAILED"), status
        else:
            slot.state = "STOPPED"
    persist()
    if outcome.state == "SUCCEEDED":
        job.finish("JOB_STATE_SUCCEEDED")
        return
    if outcome.state == "CANCELLED":
        job.finish("JOB_STATE_CANCELLED", 1, outcome.message or "The job was cancelled (scenario).")
        return
    message = outcome.message
    if status is not None and primary is not None:
        worded = failure_message(
            primary, status, restart_on_failure=False, job_restarts=0, tail_lines=tail_lines
        )
        message = worded if message is None else f"{message} {worded}"
    code = 3 if outcome.error_code is None else outcome.error_code
    job.finish("JOB_STATE_FAILED", code, message or "The job failed (scenario job_outcome).")
