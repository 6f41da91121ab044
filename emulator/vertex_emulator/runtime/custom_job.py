"""A CustomJob's run: its replicas as real processes, from PENDING to a terminal state.

A CustomJob goes QUEUED -> PENDING -> RUNNING -> SUCCEEDED / FAILED / CANCELLED (CANCELLING in
between), with ``startTime``/``endTime``, exactly as the service shows it (QUEUED and PENDING:
driver.py):

- While QUEUED it waits for its GPU quota (capacity/ledger.py) and for room for all its replicas under the
  host's ceiling (capacity/host.py); while PENDING, for free GPUs in its region (a stockout fails it after
  ``Capacity.stockout_after_s``; a FLEX_START job waits up to its ``max_wait_duration``); it says why
  in its ``service`` log. Its replicas' slots, quota and GPUs are freed once they are stopped, as the
  job ends.

- While PENDING, python package specs are installed (see packages.py) and each replica gets a free
  port on ``127.0.0.1`` (whatever address the API binds): ``CLUSTER_SPEC``/``TF_CONFIG`` hold ``host:port``
  addresses the replicas can really bind and connect to.
- Every replica of every pool is a process tree under its own supervisor (procs.py, supervise.py),
  started from the job's driver thread (the thread rule, driver.py): stopping the replica stops
  everything it started. Its supervisor writes stdout and stderr to ``<state_dir>/logs/<job id>/
  <replica key>.log`` and ``.jsonl`` (supervise.py; ``PYTHONUNBUFFERED=1`` unless the pool's ``env``
  says otherwise); its working directory is ``<state_dir>/work/<job id>/<replica key>``. It starts
  from a clean environment: only what a local process needs (``cluster.local_env``: ``PATH``,
  ``HOME``, locale...) and the names in ``config.pass_env`` come from the emulator's environment;
  then the pool's ``env`` (with ``$(VAR)`` expansion) and the service's variables (cluster.py),
  which win over both.
  ``replicas.json`` beside the logs records each replica's state, pid, exit code and restarts
  (it outlives the emulator).
- What each replica runs (container command, image map, python package, the idle Reduction Server
  placeholder) is built by replica_command.py.
- The job SUCCEEDS when the primary (``workerpool0-0``) exits 0; the other replicas are then
  stopped. Another replica exiting 0 just ends that replica. A replica exiting non-zero FAILS the job
  with error code 3 and a message naming the replica, its exit status (``128 + signal`` for a signal,
  as a container runtime reports it) and its last log lines. ``scheduling.restartJobOnWorkerRestart``
  (and ``disableRetries`` not set) applies when the platform restarts a worker -- locally, a replica
  killed by an injected crash: then, as the proto documents ("restarts the entire CustomJob if a
  worker gets restarted"), every replica is stopped and started again with the same addresses, each
  replica's ``restarts`` is counted, up to ``config.restart_limit`` times, after which the job fails.
  A replica exiting non-zero by itself is training code failing, not a worker restart: it fails the
  job, flag or not.
- ``scheduling.timeout`` (default 7 days) counts from RUNNING; past it the job FAILS with code 4
  (DEADLINE_EXCEEDED). Cancel moves the job to CANCELLING at once, stops every replica tree
  (SIGTERM, then SIGKILL after ``config.stop_grace_s``) and ends CANCELLED with error code 1.
- ``Faults.crash_replicas`` (globs on replica keys): a matching replica is SIGKILLed
  ``crash_after_s`` after its first start and reported with exit code ``crash_exit_code`` (a crash
  is injected once per replica, so a restart can be rehearsed). Faults are re-read while a job
  runs, so a change at runtime applies to running jobs.
- A SPOT job's replica can be preempted (``POST /emulator/capacity/preempt``, or
  ``Capacity.spot_preempt_after_s`` / ``spot_preemptions_per_hour``): it gets SIGTERM, then SIGKILL
  after ``Capacity.spot_notice_s`` (Compute Engine gives a Spot VM 30 s), and the whole job is
  restarted on the same addresses, the job staying RUNNING, up to ``Capacity.spot_restart_limit``
  times ("Compute Engine tries to restart the job up to six times"); the preemption after that fails
  the job (code 8, the replica named, ``STOCKOUT``). Sources: capacity/gpus.py.
- ``webAccessUris`` (``jobSpec.enableWebAccess``) maps every replica key to
  ``<web_base_url>/web/<job name>/<key>``, served from ``Runner.replica_view``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import logging
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_emulator.capacity.gpus import PREEMPTED_CODE, preempted_message, provisioning, spec_gpus
from vertex_emulator.capacity.host import spec_replicas
from vertex_emulator.core.gcs import GCS_NOTE, to_local_path
from vertex_emulator.core.timefmt import now_rfc3339, parse_duration_seconds
from vertex_emulator.runtime import procs
from vertex_emulator.runtime.cluster import (
    Replica,
    expand_env,
    job_spec_as_dict,
    local_env,
    output_dirs,
    replica_env,
    replicas_of,
    service_scope,
)
from vertex_emulator.runtime.driver import DriverHost, Interrupted, JobDriver, JobError
from vertex_emulator.runtime.procs import free_ports, read_tail, spawn
from vertex_emulator.runtime.replica_command import check_hypertune, pool_env, replica_command
from vertex_emulator.runtime.service_log import ServiceLog

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "REPLICA_HOST",
    "CustomJobRun",
    "Slot",
    "exit_status",
    "parse_duration",
    "replica_tail",
]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 7 * 24 * 3600.0
#: replicas always get loopback addresses, whatever interface the API listens on
REPLICA_HOST = "127.0.0.1"
_WAKE_S = 0.25  # how often a running job re-reads the faults


def parse_duration(raw: Any, *, field: str, default: float) -> float:
    """A protobuf Duration in JSON form (``"3600s"``, ``"0.5s"``; timefmt) or a number, in
    seconds; ``default`` for none or zero."""
    if raw is None or raw == "":
        return default
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    else:
        parsed = parse_duration_seconds(str(raw))
        if parsed is None:
            raise ValueError(f"{field}: must be a duration like '3600s' (got {raw!r})")
        value = parsed
    if value < 0:
        raise ValueError(f"{field}: must not be negative (got {raw!r})")
    return value if value > 0 else default


def replica_tail(path: Path, lines: int) -> list[str]:
    """The replica's last log lines, without the emulator's ``/gcs/`` note (it is in the file)."""
    return [line for line in read_tail(path, lines + 1) if line != GCS_NOTE][-lines:]


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
        self.trial = trial
        self.on_running = on_running
        self.on_done = on_done
        self.slots: dict[str, Slot] = {}
        self.job_restarts = 0
        self.timeout_s = DEFAULT_TIMEOUT_S
        self.restart_on_failure = False
        #: SPOT: the job runs on Spot VMs and can be preempted; preemptions so far
        self.spot = False
        self.preemptions = 0
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
        try:
            self._prepare(spec)
            self._start_all()
        except Interrupted:  # a cancel or close is in the queue
            while not self.handle_control(self.events.get()):
                pass
            return
        except JobError as exc:
            self.finish("JOB_STATE_FAILED", exc.code, exc.message)
            return
        # a cancel or close may have come in while packages installed
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                break
            if self.handle_control(event):
                return
            self.events.put(event)
            break
        uris: dict[str, str] = {}
        if spec.get("enableWebAccess"):
            default = f"http://{self.config.host}:{self.config.rest_port}"
            base = (self.config.web_base_url or default).rstrip("/")
            uris = {key: f"{base}/web/{self.job_name}/{key}" for key in self.slots}
        fields: dict[str, Any] = {"startTime": now_rfc3339(), **({"webAccessUris": uris} if uris else {})}
        self.set_state("JOB_STATE_RUNNING", **fields)
        if self.spot:
            self.host.gpus.register_spot(self.job_name, self._request_preemption)
        if self.on_running is not None:
            self.on_running(uris)
        self._monitor()

    # -- preparation --------------------------------------------------------------------------

    def _prepare(self, spec: Mapping[str, Any]) -> None:
        try:
            replicas = replicas_of(spec)
            sched = spec.get("scheduling") or {}
            self.timeout_s = parse_duration(
                sched.get("timeout"), field="jobSpec.scheduling.timeout", default=DEFAULT_TIMEOUT_S
            )
        except ValueError as exc:
            raise JobError(3, str(exc)) from None
        self.restart_on_failure = bool(sched.get("restartJobOnWorkerRestart")) and not bool(
            sched.get("disableRetries")
        )
        self.spot = provisioning(spec) == "spot"
        if self.spot:  # a Spot VM's shutdown: the supervisor must not SIGKILL before the notice ends
            with self.host.gpus.settings.lock:
                self.grace_s = max(self.config.stop_grace_s, self.host.gpus.settings.spot_notice_s)
        host = REPLICA_HOST
        ports = free_ports(len(replicas), host)
        addresses = {rep.key: f"{host}:{port}" for rep, port in zip(replicas, ports, strict=True)}
        job_dict = job_spec_as_dict(spec)
        logs = self.log_dir()
        logs.mkdir(parents=True, exist_ok=True)
        base_env = local_env(os.environ, self.config.pass_env)
        base_uri = (spec.get("baseOutputDirectory") or {}).get("outputUriPrefix")
        try:
            for uri in output_dirs(base_uri).values():
                to_local_path(uri, self.config.gcs_root, field="jobSpec.baseOutputDirectory").mkdir(
                    parents=True, exist_ok=True
                )
        except (ValueError, OSError) as exc:
            raise JobError(3, f"jobSpec.baseOutputDirectory: {exc}") from None
        installed: dict[int, Path] = {}
        for rep in replicas:
            pool_field = f"jobSpec.workerPoolSpecs[{rep.pool}]"
            try:
                vertex_env = replica_env(
                    job_id=self.job_id,
                    job_spec=spec,
                    replicas=replicas,
                    replica=rep,
                    addresses=addresses,
                    job=job_dict,
                    gcs_root=self.config.gcs_root,
                    metric_file=self.metric_file(rep.key),
                    trial=self.trial,
                    storage_host=self.config.storage_endpoint,
                )
            except ValueError as exc:
                raise JobError(3, str(exc)) from None
            service = service_scope(vertex_env)
            try:
                user_env = expand_env(pool_env(rep), service, field=f"{pool_field}.env")
            except ValueError as exc:
                raise JobError(3, str(exc)) from None
            env = {**base_env, **user_env, **vertex_env}
            argv, extra_path = replica_command(
                rep,
                pool_field=pool_field,
                config=self.config,
                job_id=self.job_id,
                log_dir=logs,
                installed=installed,
                stop=self.stop_requested,
                scope={**user_env, **service},
                env=env,  # a pool's package install gets its first replica's clean environment
            )
            if extra_path is not None:
                env["PYTHONPATH"] = os.pathsep.join(p for p in (str(extra_path), env.get("PYTHONPATH")) if p)
            cwd = self.config.state_dir / "work" / self.job_id / rep.key
            cwd.mkdir(parents=True, exist_ok=True)
            if self.trial is not None and rep.is_primary:
                check_hypertune(argv, env, cwd)
            self.slots[rep.key] = Slot(
                replica=rep,
                argv=argv,
                env=env,
                cwd=cwd,
                log_path=logs / f"{rep.key}.log",
                address=addresses[rep.key],
            )
        self._persist()

    def on_state(self, state: str, reason: str | None) -> None:
        ServiceLog(self.log_dir()).state(state, reason)  # Vertex AI's "service" lines (service_log.py)

    def replicas_needed(self, job: dict[str, Any]) -> int:
        return spec_replicas(job.get("jobSpec") or {})

    def gpus_needed(self, job: dict[str, Any]) -> dict[str, int]:
        return spec_gpus(job.get("jobSpec") or {})

    def on_waiting(self, reason: str, state: str = "QUEUED") -> None:
        super().on_waiting(reason, state)
        ServiceLog(self.log_dir()).waiting(reason, state)

    def metric_file(self, key: str) -> Path:
        """Where replica ``key`` writes its cloudml-hypertune metrics (``CLOUD_ML_HP_METRIC_FILE``)."""
        return self.log_dir() / "hypertune" / f"{key}.metrics"

    # -- processes ----------------------------------------------------------------------------

    def _start(self, slot: Slot) -> None:
        self.check_driver_thread(f"starting replica {slot.replica.key}")
        slot.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(slot.log_path, "ab") as fh:
            if slot.restarts:
                fh.write(f"---- emulator: restart {slot.restarts} of {slot.replica.key} ----\n".encode())
            fh.write(f"{GCS_NOTE}\n".encode())
            fh.flush()
            try:
                proc = spawn(slot.argv, env=slot.env, cwd=slot.cwd, log=fh, grace_s=self.grace_s)
            except (OSError, ValueError) as exc:  # ValueError: a NUL in argv or env (Create refuses it)
                raise JobError(
                    3, f"The replica {slot.replica.key} could not be started: {slot.argv[0]!r}: {exc}"
                ) from None
        with self._lock:
            slot.proc = proc
            slot.generation += 1
            slot.state = "RUNNING"
            slot.exit_code = None
            slot.started = time.monotonic()
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

    def _crash_faults(self, now: float) -> float:
        """Kill replicas the faults select; seconds until the next scheduled crash (or _WAKE_S)."""
        faults = self.config.faults
        with faults.lock:
            patterns = list(faults.crash_replicas)
            after = faults.crash_after_s
        wait = _WAKE_S
        if not patterns:
            return wait
        for slot in self.slots.values():
            if slot.state != "RUNNING" or slot.crash_fired or slot.proc is None:
                continue
            if not any(fnmatch.fnmatchcase(slot.replica.key, p) for p in patterns):
                continue
            due = slot.started + after - now
            if due <= 0:
                slot.crash_fired = slot.crashed = True
                procs.crash(slot.proc)
            else:
                wait = min(wait, due)
        return wait

    # -- Spot preemption ----------------------------------------------------------------------

    def _request_preemption(self, key: str) -> bool:
        """Ask this driver to preempt replica ``key`` (from another thread); False when it has none."""
        if key not in self.slots:
            return False
        self.events.put(("preempt", key))
        return True

    def _spot_faults(self, now: float, last_look: float) -> tuple[str | None, float]:
        """The replica the Spot settings preempt now (the primary ``spot_preempt_after_s`` after each
        start; any replica at ``spot_preemptions_per_hour``), and seconds until the timer is due."""
        settings = self.host.gpus.settings
        with settings.lock:
            after = settings.spot_preempt_after_s
        wait = _WAKE_S
        primary = next((s for s in self.slots.values() if s.replica.is_primary), None)
        if after is not None and primary is not None and primary.state == "RUNNING":
            due = primary.started + after - now
            if due <= 0 and primary.preempt_fired != primary.generation:
                primary.preempt_fired = primary.generation
                return primary.replica.key, wait
            if due > 0:
                wait = min(wait, due)
        for slot in self.slots.values():
            if slot.state == "RUNNING" and self.host.gpus.draw_preemption(now - last_look):
                return slot.replica.key, wait
        return None, wait

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
        ServiceLog(self.log_dir()).preempted(key, self.preemptions, limit)
        procs.stop([slot.proc], notice)  # the VM's ACPI soft off, then its mechanical off
        with self._lock:
            slot.state = "PREEMPTED"
            slot.exit_code = exit_status(slot.proc.returncode)
            slot.history.append({"exitCode": slot.exit_code, "endTime": now_rfc3339(), "preempted": True})
        others = [s for s in self.slots.values() if s is not slot]
        if self.preemptions > limit:
            self._stop_slots(others, "STOPPED")
            self._persist()
            self.finish("JOB_STATE_FAILED", PREEMPTED_CODE, preempted_message(key, self.preemptions - 1))
            return True
        self._stop_slots(others, "RESTARTING")
        try:
            for s in self.slots.values():
                s.restarts += 1
                self._start(s)
        except JobError as exc:
            self._stop_slots(list(self.slots.values()), "STOPPED")
            self.finish("JOB_STATE_FAILED", exc.code, exc.message)
            return True
        self._persist()
        return False

    def _monitor(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        last_look = time.monotonic()
        while True:
            now = time.monotonic()
            if now >= deadline:
                self._stop_slots(list(self.slots.values()), "STOPPED")
                self.finish(
                    "JOB_STATE_FAILED",
                    4,
                    f"The job ran longer than its scheduling.timeout of {self.timeout_s:g}s and was stopped "
                    "(DEADLINE_EXCEEDED).",
                )
                return
            wait = min(deadline - now, self._crash_faults(now))
            if self.spot:
                due, wait_spot = self._spot_faults(now, last_look)
                last_look = now
                if due is not None and self._preempt(due):
                    return
                wait = min(wait, wait_spot)
            try:
                event = self.events.get(timeout=max(0.001, wait))
            except queue.Empty:
                continue
            if self.handle_control(event):
                return
            if event[0] == "preempt":
                if self._preempt(event[1]):
                    return
                continue
            if event[0] != "exit":
                continue
            _, key, gen, rc = event
            slot = self.slots[key]
            if gen != slot.generation:
                continue  # an incarnation that was already stopped
            status = self.config.faults.crash_exit_code if slot.crashed else exit_status(rc)
            with self._lock:
                slot.exit_code = status
                slot.state = "SUCCEEDED" if status == 0 else "FAILED"
                slot.history.append({"exitCode": status, "endTime": now_rfc3339()})
            self._persist()
            if status == 0:
                if slot.replica.is_primary:
                    others = [s for s in self.slots.values() if s is not slot]
                    self._stop_slots(others, "STOPPED")
                    self.finish("JOB_STATE_SUCCEEDED")
                    return
                continue
            # A restart is for the platform restarting a worker (the injected crash stands for it),
            # never for user code exiting non-zero: that fails the job as it does on Vertex AI.
            if self.restart_on_failure and slot.crashed and self.job_restarts < self.config.restart_limit:
                self.job_restarts += 1
                self._stop_slots([s for s in self.slots.values() if s is not slot], "RESTARTING")
                try:
                    for s in self.slots.values():
                        s.restarts += 1
                        self._start(s)
                except JobError as exc:
                    self._stop_slots(list(self.slots.values()), "STOPPED")
                    self.finish("JOB_STATE_FAILED", exc.code, exc.message)
                    return
                self._persist()
                continue
            self._stop_slots([s for s in self.slots.values() if s is not slot], "STOPPED")
            self.finish("JOB_STATE_FAILED", 3, self._failure_message(slot, status))
            return

    def _failure_message(self, slot: Slot, status: int) -> str:
        reason = "Error"
        if status > 128 and status - 128 in signal.valid_signals():
            reason = f"killed by {signal.Signals(status - 128).name}"
        if slot.crashed:
            reason = "crashed (emulator fault injection)"
        tail = replica_tail(slot.log_path, self.config.log_tail_lines)
        msg = (
            f"The replica {slot.replica.key} exited with a non-zero status of {status}. "
            f"Termination reason: {reason}."
        )
        if self.restart_on_failure and slot.crashed:
            msg += f" The job was already restarted {self.job_restarts} times (the emulator's limit)."
        elif self.restart_on_failure:
            msg += (
                " restartJobOnWorkerRestart restarts the job when the platform restarts a worker,"
                " not when training code exits with an error."
            )
        if tail:
            msg += " Last log lines:\n" + "\n".join(tail)
        else:
            msg += " The replica wrote no log output."
        return msg

    # -- views --------------------------------------------------------------------------------

    def _persist(self) -> None:
        with self._lock:
            data = {key: self._slot_record(s) for key, s in self.slots.items()}
        if not data:
            return
        path = self.log_dir() / "replicas.json"
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            tmp.replace(path)

    @staticmethod
    def _slot_record(s: Slot) -> dict[str, Any]:
        return {
            "state": s.state,
            "pid": s.proc.pid if s.proc is not None else None,
            "exitCode": s.exit_code,
            "restarts": s.restarts,
            "address": s.address,
            "argv": s.argv,
        }

    def view(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            slot = self.slots.get(key)
            if slot is None:
                return None
            record = self._slot_record(slot)
        record.pop("argv")
        record["logTail"] = replica_tail(slot.log_path, self.config.log_tail_lines)
        return record
