"""The emulator's runner: drives the stored jobs, one driver thread each, and recovers after a crash.

``submit`` starts the driver of a job's kind (drivers.py: CustomJob -> custom_job.py, tuning job ->
tuning_job.py; the common phases and the thread rule are in driver.py; a job's replicas wait QUEUED for
room under the host's ceilings, capacity/host.py, and for GPU quota and free GPUs, capacity/ledger.py);
``cancel`` marks the job CANCELLING and asks its driver to stop it (a job no driver runs is CANCELLED
at once);
``replica_view`` serves a replica's state, from its running driver or from ``replicas.json``.

``close()`` stops every replica of every job and joins the threads without touching the jobs'
stored states, so the next emulator's ``recover()`` sees them as a crash would leave them:
non-terminal jobs come back FAILED (code 13, "the emulator restarted while the job was RUNNING"),
CANCELLING ones CANCELLED, and CustomJobs with ``restartJobOnWorkerRestart`` are run again.
Before that, ``recover()`` kills whatever processes of a job's replicas a dead emulator left behind
(procs.kill_leftovers).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from vertex_emulator.capacity.host import HostCeilings
from vertex_emulator.capacity.ledger import GpuCapacity
from vertex_emulator.capacity.resources import ResourceBooks
from vertex_emulator.core.clock import ServiceClock
from vertex_emulator.core.config import EmulatorConfig
from vertex_emulator.core.jobkinds import TERMINAL_STATES
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.runtime import procs
from vertex_emulator.runtime.custom_job import CustomJobRun
from vertex_emulator.runtime.driver import JobDriver, job_id_of
from vertex_emulator.runtime.drivers import driver_for
from vertex_emulator.runtime.replica_slots import replica_tail

__all__ = ["Runner"]

log = logging.getLogger(__name__)


class Runner:
    """Runs the jobs the API stores. See the module docstring for the semantics."""

    def __init__(
        self,
        store: JobStore,
        config: EmulatorConfig,
        ceilings: HostCeilings | None = None,
        gpus: GpuCapacity | None = None,
        resources: ResourceBooks | None = None,
    ) -> None:
        self.store = store
        self.config = config
        #: the host's ceilings on replicas and the room every job's replicas share (capacity/host.py)
        self.ceilings = ceilings or HostCeilings(config.max_replica_processes, config.max_job_replicas)
        #: the GPU quota and capacity books (capacity/ledger.py), shared with the service
        self.gpus = gpus or GpuCapacity(config.capacity, config.faults)
        #: the persistent resources' replicas (capacity/resources.py), shared with their service
        self.resources = resources or ResourceBooks()
        self._runs: dict[str, JobDriver] = {}
        self._lock = threading.Lock()
        self._closed = False
        #: while ``paused``: the jobs whose drivers wait to be launched after the pause
        self._held: list[str] | None = None

    # -- the contract with the API side -------------------------------------------------------

    def submit(self, name: str) -> None:
        """Start driving job ``name`` (non-blocking). A job already being driven is left alone."""
        self.launch(driver_for(self, name))

    def cancel(self, name: str) -> None:
        """Begin cancelling ``name`` (non-blocking): CANCELLING now, CANCELLED once it has stopped."""

        def mark(job: dict[str, Any]) -> None:
            if job.get("state") not in TERMINAL_STATES:
                job["state"] = "JOB_STATE_CANCELLING"

        try:
            self.store.update(name, mark)
        except KeyError:
            return
        with self._lock:
            run = self._runs.get(name)
        if run is not None:
            run.request_cancel()
            return

        def cancelled(job: dict[str, Any]) -> None:  # nothing runs it: cancel at once
            if job.get("state") not in TERMINAL_STATES:
                job["state"] = "JOB_STATE_CANCELLED"
                job["error"] = {"code": 1, "message": f"{name} was cancelled."}
                job["endTime"] = self.store.clock.now_rfc3339()

        with contextlib.suppress(KeyError):
            self.store.update(name, cancelled)

    def recover(self, cause: str = "The emulator restarted") -> None:
        """Settle jobs a previous emulator left non-terminal (call once, before serving); ``cause``
        begins the error of a job failed for it."""
        jobs = self.store.non_terminal()
        trial_jobs: set[str] = set()
        for job in jobs:
            trials = job.get("trials")
            for trial in trials if isinstance(trials, list) else []:
                if isinstance(trial, dict) and trial.get("customJob"):
                    trial_jobs.add(str(trial["customJob"]))
        for job in jobs:
            name = str(job["name"])
            try:
                self._recover_one(job, trial_jobs, cause)
            except Exception as exc:  # one damaged job must not stop the emulator from starting
                log.exception("could not recover job %s", name)
                self.store.quarantine(name, f"could not be recovered at startup: {type(exc).__name__}: {exc}")

    def _recover_one(self, job: dict[str, Any], trial_jobs: set[str], cause: str) -> None:
        name = str(job["name"])
        survivors = self._kill_leftovers(name)
        state = str(job.get("state", ""))
        if state == "JOB_STATE_PAUSED":
            return
        sched = (job.get("jobSpec") or {}).get("scheduling") or {}
        restartable = (
            "/customJobs/" in name
            and name not in trial_jobs
            and bool(sched.get("restartJobOnWorkerRestart"))
            and not bool(sched.get("disableRetries"))
            and state != "JOB_STATE_CANCELLING"
        )
        if restartable:

            def again(j: dict[str, Any]) -> None:
                if j.get("state") not in TERMINAL_STATES:
                    j["state"] = "JOB_STATE_PENDING"
                    j.pop("endTime", None)
                    j.pop("error", None)

            self.store.update(name, again)
            self.submit(name)
            return
        self.store.update(name, _recovered(state, survivors, self.store.clock, cause))

    def replica_view(self, job_name: str, replica_key: str) -> dict[str, Any] | None:
        """``{"state", "pid", "exitCode", "restarts", "address", "logTail"}`` or None if unknown."""
        with self._lock:
            run = self._runs.get(job_name)
        if isinstance(run, CustomJobRun):
            view = run.view(replica_key)
            if view is not None:
                return view
        logs = self.config.state_dir / "logs" / job_id_of(job_name)
        try:
            records = json.loads((logs / "replicas.json").read_text())
        except (OSError, ValueError):
            return None
        record = records.get(replica_key)
        if not isinstance(record, dict):
            return None
        record.pop("argv", None)
        record["logTail"] = replica_tail(logs / f"{replica_key}.log", self.config.log_tail_lines)
        return record

    def close(self) -> None:
        """Stop every replica of every job and join the driver threads (stored states untouched)."""
        with self._lock:
            self._closed = True
            runs = list(self._runs.values())
        self._stop(runs)

    def _stop(self, runs: list[JobDriver]) -> list[str]:
        """Close ``runs`` and join them; the jobs whose drivers are still alive after the wait."""
        for run in runs:
            run.request_close()
        for run in runs:
            run.join(timeout=self.config.stop_grace_s + 10.0)
        return [run.job_name for run in runs if run.is_alive()]

    @contextlib.contextmanager
    def paused(self) -> Iterator[list[str]]:
        """Stop every job as ``close`` does (replicas stopped, drivers joined, stored states untouched)
        and hold back the drivers launched while the block runs (a Create meanwhile, ``recover``'s
        restarts): they start after it, those of jobs still there and not ended. Yields the jobs whose
        drivers did not stop in time (logged). One pause at a time."""
        with self._lock:
            if self._held is not None:
                raise RuntimeError("the runner is paused already")
            self._held = []
            runs = list(self._runs.values())
        try:
            stuck = self._stop(runs)
            if stuck:
                log.error("jobs %s did not stop within %gs", stuck, self.config.stop_grace_s + 10.0)
            yield stuck
        finally:
            with self._lock:
                held, self._held = self._held or [], None
            for name in held:
                with contextlib.suppress(KeyError):
                    if self.store.get(name).get("state") not in TERMINAL_STATES:
                        self.submit(name)

    # -- the contract with the drivers (DriverHost) ---------------------------------------------

    def launch(self, driver: JobDriver) -> bool:
        """Register and start ``driver``; False when the emulator is closing or the job already runs."""
        with self._lock:
            if self._closed or driver.job_name in self._runs:
                return False
            if self._held is not None:  # paused: started after the pause
                self._held.append(driver.job_name)
                return False
            self._runs[driver.job_name] = driver
        driver.start()
        return True

    def release(self, driver: JobDriver) -> None:
        """Forget ``driver`` (called by its thread as it ends)."""
        with self._lock:
            if self._runs.get(driver.job_name) is driver:
                del self._runs[driver.job_name]

    # -- internals ----------------------------------------------------------------------------

    def run_of(self, name: str) -> JobDriver | None:
        with self._lock:
            return self._runs.get(name)

    def _kill_leftovers(self, name: str) -> list[int]:
        """SIGKILL every process a dead emulator left of a job's replicas; the pids that survived.

        A dead emulator's supervisors stop their trees on their own (parent-death signal); this is
        the backstop for what they could not stop (a supervisor that was SIGKILLed too). Processes are
        found by the ``CLOUD_ML_HP_METRIC_FILE`` their replica's tree inherited: a path under this
        job's log directory (procs.leftovers), so a reused pid is never mistaken for a replica.
        """
        prefix = f"CLOUD_ML_HP_METRIC_FILE={self.config.state_dir / 'logs' / job_id_of(name) / 'hypertune'}/"
        killed, survivors = procs.kill_leftovers(prefix, timeout_s=self.config.stop_grace_s + 5.0)
        if killed:
            log.warning("killed %d leftover process(es) of %s's replicas", killed, name)
        if survivors:
            log.error("could not stop process(es) %s of %s's replicas", survivors, name)
        return survivors


def _recovered(
    state: str, survivors: list[int], clock: ServiceClock, cause: str
) -> Callable[[dict[str, Any]], None]:
    short = state.removeprefix("JOB_STATE_")
    if survivors:
        outcome = f"processes {survivors} of its replicas could not be stopped"
    else:
        outcome = "its replicas were stopped"

    def apply(job: dict[str, Any]) -> None:
        if job.get("state") in TERMINAL_STATES:
            return
        stamp = clock.now_rfc3339()
        if state == "JOB_STATE_CANCELLING":
            job["state"] = "JOB_STATE_CANCELLED"
            job["error"] = {"code": 1, "message": f"{job['name']} was cancelled."}
        else:
            job["state"] = "JOB_STATE_FAILED"
            job["error"] = {
                "code": 13,
                "message": f"{cause} while the job was {short}; {outcome}.",
            }
        for trial in job.get("trials") or []:
            if trial.get("state") in ("ACTIVE", "REQUESTED", "STOPPING"):
                trial["state"] = "INFEASIBLE"
                trial["infeasibleReason"] = f"{cause} while the trial was running."
                trial["endTime"] = stamp
        job["endTime"] = stamp

    return apply
