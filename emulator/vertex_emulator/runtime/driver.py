"""A job's driver thread: the base of every kind of job the emulator runs.

One driver thread per job (``JobDriver``; the kinds are in drivers.py). It loads the job, takes
it through QUEUED and PENDING (``Faults.queued_s`` / ``pending_s`` hold it there, and
``provisioning_s`` in PENDING once its capacity is granted, as Vertex AI provisions VMs; a job over its GPU
quota waits QUEUED, and one with no free GPUs in its region waits PENDING, then fails with the
stockout -- a FLEX_START job waits up to its ``max_wait_duration`` instead -- capacity/ledger.py; a job
whose replicas do not fit the room left under the host's ceiling waits QUEUED, capacity/host.py, and one
that waits for GPUs gives its replica slots back meanwhile; a cancel
still ends any wait: admission.py), reads cancel and close requests from its event queue and writes the job's
terminal state.
Every state write of the driver (``persist``: its states, a terminal state above all) is retried
when the store cannot write (a full disk answers ``UNAVAILABLE``, core/jobstore.py), with a backoff
capped at ``WRITE_RETRY_MAX_S``, until it is written, the job is gone or the emulator closes (a
restart settles the job then): a job whose write failed settles once the disk has room again.

The driver knows the runner only through ``DriverHost``, so no driver module imports the runner.

The thread rule: a replica's supervisor asks for the parent-death signal (``PR_SET_PDEATHSIG``,
procs.py), and Linux sends that signal when the *thread* that started the supervisor exits, not when
the process does. A replica started from a short-lived thread (a gRPC or REST request thread, a
timer) would be stopped as soon as that thread ends. So every replica of a job is started -- and
restarted -- from that job's own driver thread, which lives as long as the job runs;
``JobDriver.check_driver_thread`` refuses any other thread (emulator/tests/test_driver.py).
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from vertex_emulator.core.config import EmulatorConfig
from vertex_emulator.core.errors import ApiError
from vertex_emulator.core.jobkinds import TERMINAL_STATES
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.runtime.admission import Admission, CapacityHost

__all__ = [
    "EVICTED_CODE",
    "WRITE_RETRY_MAX_S",
    "DriverHost",
    "Interrupted",
    "JobDriver",
    "JobError",
    "job_id_of",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: ``error.code`` of a job whose persistent resource was deleted or rebooted under it (ABORTED; the
#: service's is not documented: the emulator's choice, docs/emulator.md)
EVICTED_CODE = 10
#: the longest pause between two tries of a state write that failed (the first is 50 ms, then doubled)
WRITE_RETRY_MAX_S = 2.0


def _retryable(exc: BaseException) -> bool:
    """A state write that may succeed later: the store unavailable (a full disk), SQLite or the OS failing."""
    if isinstance(exc, ApiError):
        return exc.status == "UNAVAILABLE"
    return isinstance(exc, (sqlite3.OperationalError, OSError))


def job_id_of(name: str) -> str:
    """The numeric id at the end of a job's resource name."""
    return name.rsplit("/", 1)[-1]


class JobError(Exception):
    """The job cannot run: it ends FAILED with this error code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Interrupted(Exception):
    """Preparation stopped for a cancel or close request."""


class DriverHost(CapacityHost, Protocol):
    """What a driver needs from the runner that owns it (the runner is the one implementation): the
    books a job's admission reads (``ceilings``, ``gpus``), the store and settings, and these calls."""

    @property
    def store(self) -> JobStore: ...

    @property
    def config(self) -> EmulatorConfig: ...

    def launch(self, driver: JobDriver) -> bool:
        """Register and start ``driver``; False when the emulator is closing or the job already runs."""
        ...

    def release(self, driver: JobDriver) -> None:
        """Forget ``driver``: its thread is ending."""
        ...

    def cancel(self, name: str) -> None:
        """Begin cancelling job ``name`` (non-blocking)."""
        ...


class JobDriver(Admission, threading.Thread):
    """A job's driver thread: the QUEUED/PENDING phases, cancel/close events, terminal updates.

    Subclasses implement ``run``. Every replica of the job must be started from this thread (the
    thread rule, in the module docstring): call ``check_driver_thread`` before starting one.
    """

    kind_label = "job"
    host: DriverHost

    def __init__(self, host: DriverHost, name: str) -> None:
        super().__init__(name=f"emulator-{job_id_of(name)}", daemon=True)
        self.host = host
        self.store = host.store
        self.config = host.config
        self.job_name = name
        self.job_id = job_id_of(name)
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.closing = False
        self.final_state: str | None = None
        self.done = threading.Event()
        #: set with every cancel/close request, for work that cannot read the event queue (pip)
        self.stop_requested = threading.Event()
        #: set by a close request: a state write that keeps failing stops being retried
        self.close_requested = threading.Event()

    # -- requests from other threads ----------------------------------------------------------

    def request_cancel(self) -> None:
        self.events.put(("cancel",))
        self.stop_requested.set()

    def request_close(self) -> None:
        self.events.put(("close",))
        self.stop_requested.set()
        self.close_requested.set()

    # -- state writes ---------------------------------------------------------------------------

    def persist(self, write: Callable[[], _T]) -> _T:
        """``write()`` (a store write), tried again with backoff while the store cannot write (a full
        disk); KeyError and other errors pass through. A close request ends the retries: the write's
        last error is raised then (the restart settles the job)."""
        pause = 0.05
        warned = False
        while True:
            try:
                return write()
            except Exception as exc:
                if not _retryable(exc):
                    raise
                if not warned:
                    warned = True
                    log.warning(
                        "%s %s: a state write failed, retrying: %s", self.kind_label, self.job_name, exc
                    )
                if self.close_requested.wait(pause):
                    raise
                pause = min(pause * 2, WRITE_RETRY_MAX_S)

    # -- helpers for subclasses ---------------------------------------------------------------

    def check_driver_thread(self, action: str) -> None:
        """Raise RuntimeError unless the caller is this job's driver thread (the thread rule)."""
        current = threading.current_thread()
        if current is not self:
            raise RuntimeError(
                f"{action} must run on the job's driver thread {self.name!r}, not on {current.name!r}: "
                "the parent-death signal fires when the thread that started a replica exits"
            )

    def schedule(self) -> dict[str, Any] | None:
        """Load the job and take it through QUEUED and PENDING (with the scheduling faults' delays).

        The job dict, ready to start; ``None`` when it is gone, already over, or a cancel or close
        came during the wait.
        """
        try:
            job = self.store.get(self.job_name)
        except KeyError:
            return None
        if job.get("state") in TERMINAL_STATES:
            return None
        faults = self.config.faults
        resource = self.resource_of(job)  # on a persistent resource: its replicas, no provisioning
        with faults.lock:
            queued_s, pending_s = faults.queued_s, faults.pending_s
            pending_s += faults.provisioning_s if resource is None else 0.0
        if job.get("state") == "JOB_STATE_QUEUED":
            self.on_state("JOB_STATE_QUEUED", None)
            if self.wait_phase(queued_s):
                return None
        if not (self.wait_for_quota(job) if resource is None else self.wait_for_resource(job, resource)):
            return None
        slots = self.replicas_needed(job)
        if not self.wait_for_room(slots):
            return None
        self.set_state("JOB_STATE_PENDING")
        if resource is None and not self.wait_for_gpus(job, slots):
            return None
        if self.wait_phase(pending_s):
            return None
        return job

    def on_waiting(self, reason: str, state: str = "QUEUED") -> None:
        """The job waits, in ``state`` (``reason``: why, and for what); subclasses log it."""
        log.info("%s %s: %s", self.kind_label, self.job_name, reason)

    def wait_phase(self, seconds: float) -> bool:
        """Stay in the current phase for ``seconds`` (service seconds, core/clock.py); True when a
        cancel or close ended the job."""
        clock = self.store.clock
        deadline = clock.monotonic() + max(0.0, seconds)
        while True:
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                return False
            try:
                event = clock.get(self.events, remaining)
            except queue.Empty:
                continue
            if self.handle_control(event):
                return True

    def handle_control(self, event: tuple[Any, ...]) -> bool:
        """Handle cancel/close; True when the job is over (or the emulator is closing)."""
        if event[0] == "close":
            self.closing = True
            return True
        if event[0] == "cancel":
            self.on_cancel()
            self.finish("JOB_STATE_CANCELLED", 1, f"{self.kind_label} {self.job_name} was cancelled.")
            return True
        if event[0] == "evict":  # its persistent resource was deleted or rebooted (capacity/resources.py)
            self.on_cancel()
            if event[2]:  # deleted: "the custom jobs are automatically cancelled" (rules/sources.py)
                self.finish("JOB_STATE_CANCELLED", 1, str(event[1]))
            else:
                self.finish("JOB_STATE_FAILED", EVICTED_CODE, str(event[1]))
            return True
        return False

    def on_cancel(self) -> None:
        """Stop what the job runs (subclasses)."""

    def on_state(self, state: str, reason: str | None) -> None:
        """The job entered ``state`` (``reason``: a failed job's error message); subclasses log it."""

    def set_state(self, state: str, **fields: Any) -> dict[str, Any] | None:
        said: list[str] = []

        def apply(job: dict[str, Any]) -> None:
            if job.get("state") in TERMINAL_STATES:
                return
            if job.get("state") == "JOB_STATE_CANCELLING" and state != "JOB_STATE_CANCELLED":
                return  # a cancel is under way: only CANCELLED may follow
            job["state"] = state
            job.update(fields)
            # the state's service lines are written before the state can be read: a client that sees
            # the state finds its lines (Logging shows them no later than JobService shows the state);
            # once, however many tries the write takes
            if not said:
                self.on_state(state, None)
                said.append(state)

        try:
            return self.persist(lambda: self.store.update(self.job_name, apply))
        except KeyError:
            return None

    def finish(self, state: str, code: int | None = None, message: str | None = None) -> None:
        if self.final_state is not None:
            return

        def apply(job: dict[str, Any]) -> None:
            if job.get("state") in TERMINAL_STATES:
                return
            if job.get("state") == "JOB_STATE_CANCELLING" and state != "JOB_STATE_CANCELLED":
                # the job ended on its own while a cancel was being handled: the cancel wins,
                # as the service reports a cancelled job whatever its replicas did meanwhile
                job["state"] = "JOB_STATE_CANCELLED"
                job["error"] = {"code": 1, "message": f"{self.kind_label} {self.job_name} was cancelled."}
            else:
                job["state"] = state
                if code is not None:
                    job["error"] = {"code": code, "message": message or ""}
                else:
                    job.pop("error", None)
            job["endTime"] = self.store.clock.now_rfc3339()
            ended = str(job["state"])
            if ended not in logged:  # once, however many tries the write takes
                self.on_state(ended, message if ended == state else None)  # before the state is readable
                logged.append(ended)

        logged: list[str] = []
        try:
            final = self.persist(lambda: self.store.update(self.job_name, apply))
            self.final_state = str(final.get("state"))
        except KeyError:
            self.final_state = state
        except Exception as exc:
            if not (self.close_requested.is_set() and _retryable(exc)):
                raise
            log.warning(
                "%s %s: not settled before the emulator closed (%s)", self.kind_label, self.job_name, exc
            )
            return  # the state directory could not be written: the next start settles the job
        detail = f": {message}" if message else ""
        log.info("%s %s ended %s%s", self.kind_label, self.job_name, self.final_state, detail)
        if not logged:  # the job had ended already, or is gone: its lines as before
            self.on_state(self.final_state, message if self.final_state == state else None)

    def log_dir(self) -> Path:
        return self.config.state_dir / "logs" / self.job_id
