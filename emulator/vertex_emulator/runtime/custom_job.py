"""A CustomJob's run: its replicas as real processes, from PENDING to a terminal state.

A CustomJob goes QUEUED -> PENDING -> RUNNING -> SUCCEEDED / FAILED / CANCELLED (CANCELLING in
between), with ``startTime``/``endTime``, exactly as the service shows it (QUEUED and PENDING:
driver.py):

- While QUEUED and PENDING it waits for quota, room under the host's ceiling and free GPUs
  (driver.py, capacity/); its replicas' slots, quota and GPUs are freed once they are stopped.
- While PENDING, its replicas are made ready (custom_job_setup.py: addresses on ``127.0.0.1``, a clean
  environment, python packages installed, the command each runs; replica_command.py).
- Every replica of every pool is a process tree under its own supervisor (procs.py, supervise.py),
  started from the job's driver thread (the thread rule, driver.py): stopping the replica stops
  everything it started. It sees the ``gs://`` root at ``/gcs/`` where the host allows it (replica_gcs.py).
  Its supervisor writes stdout and stderr to ``<state_dir>/logs/<job id>/<replica key>.log`` and
  ``.jsonl`` (supervise.py; ``PYTHONUNBUFFERED=1`` unless the pool's ``env`` says otherwise).
  ``replicas.json`` beside the logs records each replica's state, pid, exit code and restarts.
- The job SUCCEEDS when the primary (``workerpool0-0``) exits 0; the other replicas are then
  stopped. Another replica exiting 0 just ends that replica. A replica exiting non-zero FAILS the job
  with error code 3 and a message naming the replica, its exit status (``128 + signal`` for a signal,
  as a container runtime reports it) and its last log lines -- unless the exit is non-permanent
  (SIGABRT, SIGSEGV): then the worker is restarted alone on its address, up to 5 times, then the
  whole job up to 3 times (replica_restarts.py has the page's rule). ``scheduling.
  restartJobOnWorkerRestart`` (and ``disableRetries`` not set) restarts the whole job whenever a
  worker would be restarted -- a transient exit, or the platform restarting it (locally, a replica
  killed by an injected crash): every replica is stopped and started again with the same addresses,
  each replica's ``restarts`` is counted, up to ``config.restart_limit`` times, after which the job
  fails.
- ``scheduling.timeout`` (default 7 days) counts from RUNNING; past it the job FAILS with code 4
  (DEADLINE_EXCEEDED). Cancel moves the job to CANCELLING at once, stops every replica tree
  (SIGTERM, then SIGKILL after ``config.stop_grace_s``) and ends CANCELLED with error code 1.
- ``Faults.crash_replicas`` crashes replicas (replica_faults.py); faults are re-read while a job runs.
- A SPOT job's replica can be preempted (``POST /emulator/capacity/preempt`` or the Spot settings:
  replica_faults.py): SIGTERM, SIGKILL after ``Capacity.spot_notice_s``, then the whole job restarts on
  the same addresses, staying RUNNING, up to ``Capacity.spot_restart_limit`` times; the preemption after
  that fails the job (code 8, ``STOCKOUT``). Sources: capacity/gpus.py.
- ``webAccessUris`` (``jobSpec.enableWebAccess``): ``<web_base_url>/web/<job name>/<key>`` per replica
  (``Runner.replica_view``). A ``job_outcome`` job is played (replica_played.py); times: core/clock.py.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vertex_emulator.capacity.gpus import PREEMPTED_CODE, preempted_message, spec_gpus
from vertex_emulator.capacity.host import spec_replicas
from vertex_emulator.runtime import procs
from vertex_emulator.runtime.custom_job_setup import (
    DEFAULT_TIMEOUT_S,
    JobPlace,
    add_slots,
    read_schedule,
    web_access_uris,
)
from vertex_emulator.runtime.driver import DriverHost, Interrupted, JobDriver, JobError
from vertex_emulator.runtime.procs import spawn
from vertex_emulator.runtime.replica_faults import crash_due, spot_due
from vertex_emulator.runtime.replica_gcs import replica_launch
from vertex_emulator.runtime.replica_played import play
from vertex_emulator.runtime.replica_restarts import RestartBook
from vertex_emulator.runtime.replica_slots import (
    Slot,
    exit_status,
    failure_message,
    replica_tail,
    slot_record,
    write_records,
)
from vertex_emulator.runtime.service_log import ServiceLog

__all__ = ["CustomJobRun"]

log = logging.getLogger(__name__)


class CustomJobRun(JobDriver):
    """Runs one CustomJob (a plain job or the job behind a tuning trial)."""

    kind_label = "CustomJob"

    def __init__(
        self,
        host: DriverHost,
        name: str,
        *,
        trial: str | None = None,
        on_running: Callable[[dict[str, str]], None] | None = None,
        on_done: Callable[[CustomJobRun], None] | None = None,
    ) -> None:
        super().__init__(host, name)
        self.trial, self.on_running, self.on_done = trial, on_running, on_done
        self.slots: dict[str, Slot] = {}
        self.job_restarts, self.book = 0, RestartBook()
        self.timeout_s, self.restart_on_failure = DEFAULT_TIMEOUT_S, False
        #: SPOT: the job runs on Spot VMs and can be preempted; preemptions so far
        self.spot, self.preemptions = False, 0
        #: seconds a replica's supervisor waits between SIGTERM and SIGKILL
        self.grace_s = self.config.stop_grace_s
        self._lock = threading.Lock()

    # -- thread body --------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._run()
        except Exception as exc:  # a bug in the runner must not leave the job RUNNING forever
            log.exception("runner error for %s", self.job_name)
            self.finish("JOB_STATE_FAILED", 13, f"Internal emulator error while running the job: {exc!r}")
        finally:
            self.host.gpus.unregister_spot(self.job_name)
            self._stop_slots(list(self.slots.values()), "STOPPED")
            self.release_resources()  # its replicas are stopped: the next job in line may start
            self._persist()
            self.host.release(self)
            self.done.set()
            if self.on_done is not None:
                try:
                    self.on_done(self)
                except Exception:
                    log.exception("on_done callback failed for %s", self.job_name)

    def _run(self) -> None:
        job = self.schedule()
        if job is None:
            return
        spec: dict[str, Any] = job.get("jobSpec") or {}
        played = self.store.outcomes.claim(job)  # a scenario's job_outcome: no replica runs
        try:
            self._prepare(spec, played=played is not None)
            if played is None:
                self._start_all()
        except Interrupted:  # a cancel or close is in the queue
            while not self.handle_control(self.events.get()):
                pass
            return
        except JobError as exc:
            self.finish("JOB_STATE_FAILED", exc.code, exc.message)
            return
        if played is not None and self.wait_phase(played.queued_s):  # job_outcome's queued: PENDING
            return
        while True:  # a cancel or close may have come in while packages installed
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                break
            if self.handle_control(event):
                return
            self.events.put(event)
            break
        uris = web_access_uris(spec, self.config, self.job_name, self.slots)
        fields: dict[str, Any] = {"webAccessUris": uris} if uris else {}
        self.set_state("JOB_STATE_RUNNING", startTime=self.store.clock.now_rfc3339(), **fields)
        if self.spot:
            self.host.gpus.register_spot(self.job_name, self._request_preemption)
        if self.on_running is not None:
            self.on_running(uris)
        if played is not None:
            return play(self, played, self._persist, self.config.log_tail_lines)
        self._monitor()

    # -- preparation --------------------------------------------------------------------------

    def _prepare(self, spec: Mapping[str, Any], *, played: bool = False) -> None:
        schedule = read_schedule(spec)
        self.timeout_s = schedule.timeout_s
        self.restart_on_failure = schedule.restart_on_failure
        self.spot = schedule.spot
        if self.spot:  # a Spot VM's shutdown: the supervisor must not SIGKILL before the notice ends
            with self.host.gpus.settings.lock:
                self.grace_s = max(self.config.stop_grace_s, self.host.gpus.settings.spot_notice_s)
        place = JobPlace(
            job_id=self.job_id,
            config=self.config,
            log_dir=self.log_dir(),
            metric_file=self.metric_file,
            trial=self.trial,
            stop=self.stop_requested,
            job_name=self.job_name,
        )
        add_slots(self.slots, spec, schedule.replicas, place, played=played)
        self._persist()

    def on_state(self, state: str, reason: str | None) -> None:
        ServiceLog(self.log_dir(), self.store.clock).state(state, reason)  # Vertex AI's "service" lines

    def replicas_needed(self, job: dict[str, Any]) -> int:
        return spec_replicas(job.get("jobSpec") or {})

    def gpus_needed(self, job: dict[str, Any]) -> dict[str, int]:
        return spec_gpus(job.get("jobSpec") or {})

    def on_waiting(self, reason: str, state: str = "QUEUED") -> None:
        super().on_waiting(reason, state)
        ServiceLog(self.log_dir(), self.store.clock).waiting(reason, state)

    def metric_file(self, key: str) -> Path:
        """Where replica ``key`` writes its cloudml-hypertune metrics (``CLOUD_ML_HP_METRIC_FILE``)."""
        return self.log_dir() / "hypertune" / f"{key}.metrics"

    # -- processes ----------------------------------------------------------------------------

    def _start(self, slot: Slot) -> None:
        self.check_driver_thread(f"starting replica {slot.replica.key}")
        slot.log_path.parent.mkdir(parents=True, exist_ok=True)
        prefix, note = replica_launch(self.config)  # /gcs/ or not: replica_gcs.py
        with open(slot.log_path, "ab") as fh:
            if slot.restarts:
                fh.write(f"---- emulator: restart {slot.restarts} of {slot.replica.key} ----\n".encode())
            fh.write(f"{note}\n".encode())
            fh.flush()
            try:
                proc = spawn([*prefix, *slot.argv], env=slot.env, cwd=slot.cwd, log=fh, grace_s=self.grace_s)
            except (OSError, ValueError) as exc:  # ValueError: a NUL in argv or env (Create refuses it)
                raise JobError(
                    3, f"The replica {slot.replica.key} could not be started: {slot.argv[0]!r}: {exc}"
                ) from None
        with self._lock:
            slot.proc, slot.state, slot.exit_code = proc, "RUNNING", None
            slot.generation += 1
            slot.started = self.store.clock.monotonic()  # service seconds: the Spot and crash timers
            slot.crashed = False
            slot.preempt_fired = 0
        gen = slot.generation
        key = slot.replica.key

        def wait() -> None:
            rc = proc.wait()
            self.events.put(("exit", key, gen, rc))

        threading.Thread(target=wait, name=f"wait-{self.job_id}-{key}", daemon=True).start()

    def _start_all(self) -> None:
        for slot in self.slots.values():
            self._start(slot)
        self._persist()

    def _stop_slots(self, slots: list[Slot], state: str) -> None:
        """Stop every live replica tree at once (SIGTERM, SIGKILL after the grace period; procs.stop)."""
        live = [s for s in slots if s.proc is not None]
        procs.stop([s.proc for s in live if s.proc is not None], self.config.stop_grace_s)
        for s in live:
            assert s.proc is not None
            with self._lock:
                if s.state == "RUNNING":
                    s.state = state
                    s.exit_code = exit_status(s.proc.returncode)

    def on_cancel(self) -> None:
        self._stop_slots(list(self.slots.values()), "CANCELLED")

    # -- Spot preemption ----------------------------------------------------------------------

    def _request_preemption(self, key: str) -> bool:
        """Ask this driver to preempt replica ``key`` (from another thread); False when it has none."""
        if key not in self.slots:
            return False
        self.events.put(("preempt", key))
        return True

    def _preempt(self, key: str) -> bool:
        """Preempt replica ``key``: SIGTERM, SIGKILL after the notice; then restart the whole job, or,
        past ``spot_restart_limit`` restarts, fail it. True when the job ended."""
        slot = self.slots.get(key)
        if slot is None or slot.state != "RUNNING" or slot.proc is None:
            return False  # it already ended: nothing to preempt
        settings = self.host.gpus.settings
        with settings.lock:
            notice, limit = settings.spot_notice_s, settings.spot_restart_limit
        self.preemptions += 1
        ServiceLog(self.log_dir(), self.store.clock).preempted(key, self.preemptions, limit)
        clock = self.store.clock  # the notice in service seconds
        procs.stop([slot.proc], clock.real_s(notice))  # the VM's ACPI soft off, then its mechanical off
        with self._lock:
            slot.state, slot.exit_code = "PREEMPTED", exit_status(slot.proc.returncode)
            record = {"exitCode": slot.exit_code, "endTime": clock.now_rfc3339(), "preempted": True}
            slot.history.append(record)
        others = [s for s in self.slots.values() if s is not slot]
        if self.preemptions > limit:
            self._stop_slots(others, "STOPPED")
            self._persist()
            self.finish("JOB_STATE_FAILED", PREEMPTED_CODE, preempted_message(key, self.preemptions - 1))
            return True
        return self._restart_all(slot)

    def _restart_all(self, cause: Slot, only: Slot | None = None) -> bool:
        """Stop the replicas other than ``cause`` and start every replica (or ``only``) again, on the same
        addresses; True when a replica could not be started (the job then FAILED)."""
        slots = [only] if only is not None else list(self.slots.values())
        self._stop_slots([s for s in slots if s is not cause], "RESTARTING")
        try:
            for s in slots:
                s.restarts += 1
                self._start(s)
        except JobError as exc:
            self._stop_slots(list(self.slots.values()), "STOPPED")
            self.finish("JOB_STATE_FAILED", exc.code, exc.message)
            return True
        self._persist()
        return False

    def _monitor(self) -> None:
        clock = self.store.clock  # the service's timers, in service seconds (core/clock.py)
        deadline = clock.monotonic() + self.timeout_s
        last_look = clock.monotonic()
        while True:
            now = clock.monotonic()
            if now >= deadline:
                self._stop_slots(list(self.slots.values()), "STOPPED")
                self.finish(
                    "JOB_STATE_FAILED",
                    4,
                    f"The job ran longer than its scheduling.timeout of {self.timeout_s:g}s and was stopped "
                    "(DEADLINE_EXCEEDED).",
                )
                return
            wait = min(deadline - now, crash_due(list(self.slots.values()), self.config.faults, now))
            if self.spot:
                due, wait_spot = spot_due(list(self.slots.values()), self.host.gpus, now, last_look)
                last_look = now
                if due is not None and self._preempt(due):
                    return
                wait = min(wait, wait_spot)
            try:
                event = clock.get(self.events, max(0.001, wait))
            except queue.Empty:
                continue
            if self._on_event(event):
                return

    def _on_event(self, event: tuple[Any, ...]) -> bool:
        """Handle one event of the running job; True when the job ended."""
        if self.handle_control(event):
            return True
        if event[0] == "preempt":
            return self._preempt(event[1])
        if event[0] == "exit":
            _, key, gen, rc = event
            return self._on_exit(self.slots[key], gen, rc)
        return False

    def _on_exit(self, slot: Slot, gen: int, rc: int) -> bool:
        """Replica ``slot``'s incarnation ``gen`` exited with return code ``rc``; True when the job ended."""
        if gen != slot.generation:
            return False  # an incarnation that was already stopped
        status = self.config.faults.crash_exit_code if slot.crashed else exit_status(rc)
        with self._lock:
            slot.exit_code = status
            slot.state = "SUCCEEDED" if status == 0 else "FAILED"
            slot.history.append({"exitCode": status, "endTime": self.store.clock.now_rfc3339()})
        self._persist()
        others = [s for s in self.slots.values() if s is not slot]
        if status == 0:
            if not slot.replica.is_primary:
                return False
            self._stop_slots(others, "STOPPED")
            self.finish("JOB_STATE_SUCCEEDED")
            return True
        # which exits restart the worker, the job, or fail it: replica_restarts.py (the page's rule)
        action = self.book.decide(
            slot.replica.key,
            status,
            platform=slot.crashed,
            whole_job=self.restart_on_failure,
            job_restarts_left=self.job_restarts < self.config.restart_limit,
        )
        if action == "worker":
            return self._restart_all(slot, only=slot)
        if action == "job":
            self.job_restarts += self.restart_on_failure
            return self._restart_all(slot)
        self._stop_slots(others, "STOPPED")
        tail, flag, restarts = self.config.log_tail_lines, self.restart_on_failure, self.job_restarts
        note = self.book.note()
        message = failure_message(
            slot, status, restart_on_failure=flag, job_restarts=restarts, tail_lines=tail, note=note
        )
        self.finish("JOB_STATE_FAILED", 3, message)
        return True

    # -- views --------------------------------------------------------------------------------

    def _persist(self) -> None:
        with self._lock:
            data = {key: slot_record(s) for key, s in self.slots.items()}
        write_records(self.log_dir() / "replicas.json", data)

    def view(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            slot = self.slots.get(key)
            if slot is None:
                return None
            record = slot_record(slot)
        record.pop("argv")
        record["logTail"] = replica_tail(slot.log_path, self.config.log_tail_lines)
        return record
