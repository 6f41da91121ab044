"""A running CustomJob's replicas as the driver tracks them (``Slot``), and what is read back from them.

Each replica of a CustomJob is a ``Slot``: its command, environment, working directory, log file
and address (replica_setup.py builds them), and, once started, its process, state, exit code and
restarts. ``replicas.json`` beside the job's logs records each replica's state, pid, exit code and
restarts (``write_records``; it outlives the emulator). A replica that ends non-zero fails the job
with the message ``failure_message`` writes: the replica's key, its exit status (``128 + signal``
for a signal, as a container runtime reports it: ``exit_status``) and its last log lines
(``replica_tail``).
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_emulator.core.gcs import GCS_NOTES
from vertex_emulator.runtime.cluster import Replica
from vertex_emulator.runtime.procs import read_tail
from vertex_emulator.runtime.replica_restarts import is_transient

__all__ = ["Slot", "exit_status", "failure_message", "replica_tail", "slot_record", "write_records"]


@dataclass
class Slot:
    """One replica of a running CustomJob."""

    replica: Replica
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    address: str
    proc: subprocess.Popen[bytes] | None = None
    generation: int = 0
    state: str = "PENDING"
    exit_code: int | None = None
    restarts: int = 0
    started: float = 0.0
    crashed: bool = False
    crash_fired: bool = False
    #: when the Spot preemption timer (``spot_preempt_after_s``) last fired for this incarnation
    preempt_fired: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)


def exit_status(rc: int) -> int:
    """A Popen return code as a container runtime reports it: ``128 + n`` for signal ``n``."""
    return 128 - rc if rc < 0 else rc


def replica_tail(path: Path, lines: int) -> list[str]:
    """The replica's last log lines, without the emulator's ``/gcs/`` note (it is in the file)."""
    return [line for line in read_tail(path, lines + 1) if line not in GCS_NOTES][-lines:]


def slot_record(s: Slot) -> dict[str, Any]:
    """The replica as ``replicas.json`` records it."""
    return {
        "state": s.state,
        "pid": s.proc.pid if s.proc is not None else None,
        "exitCode": s.exit_code,
        "restarts": s.restarts,
        "address": s.address,
        "argv": s.argv,
    }


def write_records(path: Path, data: Mapping[str, dict[str, Any]]) -> None:
    """Replace ``replicas.json`` at ``path`` with ``data`` (replica key -> record); nothing when empty."""
    if not data:
        return
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)


def failure_message(
    slot: Slot, status: int, *, restart_on_failure: bool, job_restarts: int, tail_lines: int, note: str = ""
) -> str:
    """The failed job's error message: the replica, its exit status and reason, its last log lines."""
    reason = "Error"
    if status > 128 and status - 128 in signal.valid_signals():
        reason = f"killed by {signal.Signals(status - 128).name}"
    if slot.crashed:
        reason = "crashed (emulator fault injection)"
    tail = replica_tail(slot.log_path, tail_lines)
    msg = (
        f"The replica {slot.replica.key} exited with a non-zero status of {status}. "
        f"Termination reason: {reason}."
    )
    msg += note
    if restart_on_failure and (slot.crashed or is_transient(status)):
        msg += f" The job was already restarted {job_restarts} times (the emulator's limit)."
    elif restart_on_failure:
        msg += (
            " restartJobOnWorkerRestart restarts the job when the platform restarts a worker,"
            " not when training code exits with an error."
        )
    if tail:
        msg += " Last log lines:\n" + "\n".join(tail)
    else:
        msg += " The replica wrote no log output."
    return msg
