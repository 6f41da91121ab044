"""The emulator's runner: drives stored jobs through their states with real replica processes.

One driver thread per job. A CustomJob goes QUEUED -> PENDING -> RUNNING -> SUCCEEDED / FAILED /
CANCELLED (CANCELLING in between), with ``startTime``/``endTime``, exactly as the service shows it:

- ``Faults.queued_s`` / ``pending_s`` hold the job in QUEUED / PENDING (a cancel still ends it).
- While PENDING, python package specs are installed (see packages.py) and each replica gets a free
  port on ``127.0.0.1`` (whatever address the API binds): ``CLUSTER_SPEC``/``TF_CONFIG`` hold ``host:port``
  addresses the replicas can really bind and connect to.
- Every replica of every pool is a process tree under its own supervisor (procs.py, supervise.py):
  stopping the replica stops everything it started. stdout and stderr go to
  ``<state_dir>/logs/<job id>/<replica key>.log`` (``PYTHONUNBUFFERED=1`` unless the pool's ``env``
  says otherwise); its working directory is ``<state_dir>/work/<job id>/<replica key>``. It starts
  from a clean environment: only what a local process needs (``cluster.local_env``: ``PATH``,
  ``HOME``, locale...) and the names in ``config.pass_env`` come from the emulator's environment;
  then the pool's ``env`` (with ``$(VAR)`` expansion) and the service's variables (cluster.py),
  which win over both.
  ``replicas.json`` beside the logs records each replica's state, pid, exit code and restarts
  (it outlives the emulator).
- Container specs run ``command + args`` on the host; a spec without ``command`` runs
  ``config.image_map[imageUri] + args`` (the image's entrypoint), and fails the job when the image
  is not mapped. Python package specs run ``<python> -m <pythonModule> <args>`` where ``<python>``
  is ``config.image_map[executorImageUri]`` or the emulator's own interpreter.
- Reduction Server replicas (``*/vertex-ai-restricted/training/reductionserver:*``) are shown
  running but do no reduction: each is an idle placeholder process that waits to be stopped.
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
- ``webAccessUris`` (``jobSpec.enableWebAccess``) maps every replica key to
  ``<web_base_url>/web/<job name>/<key>``, served from ``replica_view``.

``close()`` stops every replica of every job and joins the threads without touching the jobs'
stored states, so the next emulator's ``recover()`` sees them as a crash would leave them:
non-terminal jobs come back FAILED (code 13, "the emulator restarted while the job was RUNNING"),
CANCELLING ones CANCELLED, and CustomJobs with ``restartJobOnWorkerRestart`` are run again.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_vertex_dist.emulator import procs
from airflow_vertex_dist.emulator.cluster import (
    Replica,
    expand_env,
    job_spec_as_dict,
    local_env,
    output_dirs,
    replica_env,
    replicas_of,
)
from airflow_vertex_dist.emulator.config import EmulatorConfig
from airflow_vertex_dist.emulator.gcs import GCS_NOTE, to_local_path
from airflow_vertex_dist.emulator.packages import InstallInterrupted, PackageInstallError, install_packages
from airflow_vertex_dist.emulator.procs import free_ports, read_tail, spawn
from airflow_vertex_dist.emulator.store import TERMINAL_STATES, JobStore, now_rfc3339

__all__ = ["REPLICA_HOST", "CustomJobRun", "JobDriver", "Runner", "job_id_of", "parse_duration"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 7 * 24 * 3600.0
#: replicas always get loopback addresses, whatever interface the API listens on
REPLICA_HOST = "127.0.0.1"
_WAKE_S = 0.25  # how often a running job re-reads the faults
_PYTHON_RE = re.compile(r"python[0-9.]*")
_REDUCER_CODE = (
    "import signal\n"
    "print('emulated Reduction Server replica: accepted and idle; it performs no reduction', flush=True)\n"
    "signal.pause()\n"
)


def parse_duration(raw: Any, *, field: str, default: float) -> float:
    """A protobuf Duration in JSON form (``"3600s"``, ``"0.5s"``) or a number, in seconds."""
    if raw is None or raw == "":
        return default
    text = str(raw).strip()
    if text.endswith("s"):
        text = text[:-1]
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{field}: must be a duration like '3600s' (got {raw!r})") from None
    if value < 0:
        raise ValueError(f"{field}: must not be negative (got {raw!r})")
    return value if value > 0 else default


def job_id_of(name: str) -> str:
    return name.rsplit("/", 1)[-1]


class _JobError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Interrupted(Exception):
    """Preparation stopped for a cancel or close request."""


class JobDriver(threading.Thread):
    """A job's driver thread: the QUEUED/PENDING phases, cancel/close events, terminal updates."""

    kind_label = "job"

    def __init__(self, runner: Runner, name: str) -> None:
        super().__init__(name=f"emulator-{job_id_of(name)}", daemon=True)
        self.runner = runner
        self.store = runner.store
        self.config = runner.config
        self.job_name = name
        self.job_id = job_id_of(name)
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.closing = False
        self.final_state: str | None = None
        self.done = threading.Event()
        #: set with every cancel/close request, for work that cannot read the event queue (pip)
        self.stop_requested = threading.Event()

    # -- requests from other threads ----------------------------------------------------------

    def request_cancel(self) -> None:
        self.events.put(("cancel",))
        self.stop_requested.set()

    def request_close(self) -> None:
        self.events.put(("close",))
        self.stop_requested.set()

    # -- helpers for subclasses ---------------------------------------------------------------

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
        with faults.lock:
            queued_s, pending_s = faults.queued_s, faults.pending_s
        if job.get("state") == "JOB_STATE_QUEUED" and self.wait_phase(queued_s):
            return None
        self.set_state("JOB_STATE_PENDING")
        if self.wait_phase(pending_s):
            return None
        return job

    def wait_phase(self, seconds: float) -> bool:
        """Stay in the current phase for ``seconds``; True when a cancel or close ended the job."""
        deadline = time.monotonic() + max(0.0, seconds)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                event = self.events.get(timeout=remaining)
            except queue.Empty:
                return False
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
        return False

    def on_cancel(self) -> None:
        """Stop what the job runs (subclasses)."""

    def set_state(self, state: str, **fields: Any) -> dict[str, Any] | None:
        def apply(job: dict[str, Any]) -> None:
            if job.get("state") in TERMINAL_STATES:
                return
            if job.get("state") == "JOB_STATE_CANCELLING" and state != "JOB_STATE_CANCELLED":
                return  # a cancel is under way: only CANCELLED may follow
            job["state"] = state
            job.update(fields)

        try:
            return self.store.update(self.job_name, apply)
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
            job["endTime"] = now_rfc3339()

        try:
            final = self.store.update(self.job_name, apply)
            self.final_state = str(final.get("state"))
        except KeyError:
            self.final_state = state
        detail = f": {message}" if message else ""
        log.info("%s %s ended %s%s", self.kind_label, self.job_name, self.final_state, detail)

    def log_dir(self) -> Path:
        return self.config.state_dir / "logs" / self.job_id


@dataclass
class _Slot:
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
    history: list[dict[str, Any]] = field(default_factory=list)


def _exit_status(rc: int) -> int:
    """A Popen return code as a container runtime reports it: ``128 + n`` for signal ``n``."""
    return 128 - rc if rc < 0 else rc


class CustomJobRun(JobDriver):
    """Runs one CustomJob (a plain job or the job behind a tuning trial)."""

    kind_label = "CustomJob"

    def __init__(
        self,
        runner: Runner,
        name: str,
        *,
        trial: str | None = None,
        on_running: Callable[[dict[str, str]], None] | None = None,
        on_done: Callable[[CustomJobRun], None] | None = None,
    ) -> None:
        super().__init__(runner, name)
        self.trial = trial
        self.on_running = on_running
        self.on_done = on_done
        self.slots: dict[str, _Slot] = {}
        self.job_restarts = 0
        self.timeout_s = DEFAULT_TIMEOUT_S
        self.restart_on_failure = False
        self._lock = threading.Lock()

    # -- thread body --------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._run()
        except Exception as exc:  # a bug in the runner must not leave the job RUNNING forever
            log.exception("runner error for %s", self.job_name)
            self.finish("JOB_STATE_FAILED", 13, f"Internal emulator error while running the job: {exc!r}")
        finally:
            self._stop_slots(list(self.slots.values()), "STOPPED")
            self._persist()
            self.runner._forget(self)
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
        except _Interrupted:  # a cancel or close is in the queue
            while not self.handle_control(self.events.get()):
                pass
            return
        except _JobError as exc:
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
        fields: dict[str, Any] = {"startTime": now_rfc3339()}
        if uris:
            fields["webAccessUris"] = uris
        self.set_state("JOB_STATE_RUNNING", **fields)
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
            raise _JobError(3, str(exc)) from None
        self.restart_on_failure = bool(sched.get("restartJobOnWorkerRestart")) and not bool(
            sched.get("disableRetries")
        )
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
            raise _JobError(3, f"jobSpec.baseOutputDirectory: {exc}") from None
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
                raise _JobError(3, str(exc)) from None
            argv, env_list, extra_path = self._command(rep, pool_field, installed)
            try:
                user_env = expand_env(env_list, {**base_env, **vertex_env}, field=f"{pool_field}.env")
            except ValueError as exc:
                raise _JobError(3, str(exc)) from None
            env = {**base_env, **user_env, **vertex_env}
            if extra_path is not None:
                env["PYTHONPATH"] = os.pathsep.join(p for p in (str(extra_path), env.get("PYTHONPATH")) if p)
            cwd = self.config.state_dir / "work" / self.job_id / rep.key
            cwd.mkdir(parents=True, exist_ok=True)
            if self.trial is not None and rep.is_primary:
                self._check_hypertune(argv, env, cwd)
            self.slots[rep.key] = _Slot(
                replica=rep,
                argv=argv,
                env=env,
                cwd=cwd,
                log_path=logs / f"{rep.key}.log",
                address=addresses[rep.key],
            )
        self._persist()

    def _check_hypertune(self, argv: list[str], env: Mapping[str, str], cwd: Path) -> None:
        """A tuning trial's primary reports its metric with cloudml-hypertune: check that its Python
        (the first ``python*`` of the command, run with the replica's environment) can import it."""
        python = next((a for a in argv if _PYTHON_RE.fullmatch(os.path.basename(a))), None)
        if python is None:
            return  # not a Python command we can name: the trial's log will tell
        try:
            probe = subprocess.run(
                [python, "-c", "import hypertune"],
                env=dict(env),
                cwd=str(cwd),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise _JobError(3, f"cannot check that {python!r} imports hypertune: {exc}") from None
        if probe.returncode != 0:
            raise _JobError(
                3,
                f"The trial's Python ({python}) cannot import hypertune: install cloudml-hypertune where the "
                "trainer runs (pip install cloudml-hypertune), as in the training container on Vertex AI; "
                "the trial reports its metric through it.",
            )

    def metric_file(self, key: str) -> Path:
        """Where replica ``key`` writes its cloudml-hypertune metrics (``CLOUD_ML_HP_METRIC_FILE``)."""
        return self.log_dir() / "hypertune" / f"{key}.metrics"

    def _command(
        self, rep: Replica, pool_field: str, installed: dict[int, Path]
    ) -> tuple[list[str], list[Mapping[str, Any]], Path | None]:
        spec = rep.spec
        if rep.is_reducer:
            return [sys.executable, "-S", "-c", _REDUCER_CODE], [], None
        container = spec.get("containerSpec")
        package = spec.get("pythonPackageSpec")
        if container:
            command = [str(a) for a in container.get("command") or []]
            args = [str(a) for a in container.get("args") or []]
            image = str(container.get("imageUri", ""))
            if command:
                return command + args, list(container.get("env") or []), None
            prefix = self.config.image_map.get(image)
            if not prefix:
                raise _JobError(
                    3,
                    f"{pool_field}.containerSpec: image {image!r} gives no command and the emulator has no "
                    "image map entry for it (add one with --image-map IMAGE=COMMAND, or set command)",
                )
            return list(prefix) + args, list(container.get("env") or []), None
        if package:
            module = str(package.get("pythonModule") or "")
            if not module:
                raise _JobError(3, f"{pool_field}.pythonPackageSpec.pythonModule: required")
            if rep.pool not in installed:
                target = self.config.state_dir / "packages" / self.job_id / f"workerpool{rep.pool}"
                try:
                    installed[rep.pool] = install_packages(
                        [str(u) for u in package.get("packageUris") or []],
                        target,
                        gcs_root=self.config.gcs_root,
                        log_path=self.log_dir() / f"install-workerpool{rep.pool}.log",
                        field=f"{pool_field}.pythonPackageSpec.packageUris",
                        stop=self.stop_requested,
                    )
                except InstallInterrupted:
                    raise _Interrupted from None
                except PackageInstallError as exc:
                    raise _JobError(3, str(exc)) from None
            executor = str(package.get("executorImageUri", ""))
            prefix = list(self.config.image_map.get(executor) or [sys.executable])
            args = [str(a) for a in package.get("args") or []]
            return prefix + ["-m", module] + args, list(package.get("env") or []), installed[rep.pool]
        raise _JobError(3, f"{pool_field}: exactly one of containerSpec or pythonPackageSpec is required")

    # -- processes ----------------------------------------------------------------------------

    def _start(self, slot: _Slot) -> None:
        slot.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(slot.log_path, "ab") as fh:
            if slot.restarts:
                fh.write(f"---- emulator: restart {slot.restarts} of {slot.replica.key} ----\n".encode())
            fh.write(f"{GCS_NOTE}\n".encode())
            fh.flush()
            try:
                proc = spawn(slot.argv, env=slot.env, cwd=slot.cwd, log=fh, grace_s=self.config.stop_grace_s)
            except OSError as exc:
                raise _JobError(
                    3, f"The replica {slot.replica.key} could not be started: {slot.argv[0]!r}: {exc}"
                ) from None
        with self._lock:
            slot.proc = proc
            slot.generation += 1
            slot.state = "RUNNING"
            slot.exit_code = None
            slot.started = time.monotonic()
            slot.crashed = False
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

    def _stop_slots(self, slots: list[_Slot], state: str) -> None:
        """Stop every live replica tree at once (SIGTERM, SIGKILL after the grace period; procs.stop)."""
        live = [s for s in slots if s.proc is not None]
        procs.stop([s.proc for s in live if s.proc is not None], self.config.stop_grace_s)
        for s in live:
            assert s.proc is not None
            with self._lock:
                if s.state == "RUNNING":
                    s.state = state
                    s.exit_code = _exit_status(s.proc.returncode)

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

    def _monitor(self) -> None:
        deadline = time.monotonic() + self.timeout_s
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
            try:
                event = self.events.get(timeout=max(0.001, wait))
            except queue.Empty:
                continue
            if self.handle_control(event):
                return
            if event[0] != "exit":
                continue
            _, key, gen, rc = event
            slot = self.slots[key]
            if gen != slot.generation:
                continue  # an incarnation that was already stopped
            status = self.config.faults.crash_exit_code if slot.crashed else _exit_status(rc)
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
                except _JobError as exc:
                    self._stop_slots(list(self.slots.values()), "STOPPED")
                    self.finish("JOB_STATE_FAILED", exc.code, exc.message)
                    return
                self._persist()
                continue
            self._stop_slots([s for s in self.slots.values() if s is not slot], "STOPPED")
            self.finish("JOB_STATE_FAILED", 3, self._failure_message(slot, status))
            return

    def _failure_message(self, slot: _Slot, status: int) -> str:
        reason = "Error"
        if status > 128 and status - 128 in signal.valid_signals():
            reason = f"killed by {signal.Signals(status - 128).name}"
        if slot.crashed:
            reason = "crashed (emulator fault injection)"
        tail = _replica_tail(slot.log_path, self.config.log_tail_lines)
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
    def _slot_record(s: _Slot) -> dict[str, Any]:
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
        record["logTail"] = _replica_tail(slot.log_path, self.config.log_tail_lines)
        return record


class Runner:
    """Runs the jobs the API stores. See the module docstring for the semantics."""

    def __init__(self, store: JobStore, config: EmulatorConfig) -> None:
        self.store = store
        self.config = config
        self._runs: dict[str, JobDriver] = {}
        self._lock = threading.Lock()
        self._closed = False

    # -- the contract with the API side -------------------------------------------------------

    def submit(self, name: str) -> None:
        """Start driving job ``name`` (non-blocking). A job already being driven is left alone."""
        if "/hyperparameterTuningJobs/" in name:
            from airflow_vertex_dist.emulator.tuning import TuningRun

            self._launch(TuningRun(self, name))
        else:
            self._launch(CustomJobRun(self, name))

    def start_trial(
        self,
        name: str,
        trial: str,
        on_running: Callable[[dict[str, str]], None],
        on_done: Callable[[CustomJobRun], None],
    ) -> CustomJobRun | None:
        """Run the CustomJob behind tuning trial ``trial``; None when the emulator is closing."""
        run = CustomJobRun(self, name, trial=trial, on_running=on_running, on_done=on_done)
        return run if self._launch(run) else None

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
                job["endTime"] = now_rfc3339()

        with contextlib.suppress(KeyError):
            self.store.update(name, cancelled)

    def recover(self) -> None:
        """Settle jobs a previous emulator left non-terminal (call once, before serving)."""
        jobs = self.store.non_terminal()
        trial_jobs: set[str] = set()
        for job in jobs:
            for trial in job.get("trials") or []:
                if trial.get("customJob"):
                    trial_jobs.add(str(trial["customJob"]))
        for job in jobs:
            name = str(job["name"])
            survivors = self._kill_leftovers(name)
            state = str(job.get("state", ""))
            if state == "JOB_STATE_PAUSED":
                continue
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
                continue
            self.store.update(name, _recovered(state, survivors))

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
        record["logTail"] = _replica_tail(logs / f"{replica_key}.log", self.config.log_tail_lines)
        return record

    def close(self) -> None:
        """Stop every replica of every job and join the driver threads (stored states untouched)."""
        with self._lock:
            self._closed = True
            runs = list(self._runs.values())
        for run in runs:
            run.request_close()
        for run in runs:
            run.join(timeout=self.config.stop_grace_s + 10.0)

    # -- internals ----------------------------------------------------------------------------

    def _launch(self, run: JobDriver) -> bool:
        with self._lock:
            if self._closed or run.job_name in self._runs:
                return False
            self._runs[run.job_name] = run
        run.start()
        return True

    def _forget(self, run: JobDriver) -> None:
        with self._lock:
            if self._runs.get(run.job_name) is run:
                del self._runs[run.job_name]

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


def _replica_tail(path: Path, lines: int) -> list[str]:
    """The replica's last log lines, without the emulator's ``/gcs/`` note (it is in the file)."""
    return [line for line in read_tail(path, lines + 1) if line != GCS_NOTE][-lines:]


def _recovered(state: str, survivors: list[int]) -> Callable[[dict[str, Any]], None]:
    short = state.removeprefix("JOB_STATE_")
    if survivors:
        outcome = f"processes {survivors} of its replicas could not be stopped"
    else:
        outcome = "its replicas were stopped"

    def apply(job: dict[str, Any]) -> None:
        if job.get("state") in TERMINAL_STATES:
            return
        stamp = now_rfc3339()
        if state == "JOB_STATE_CANCELLING":
            job["state"] = "JOB_STATE_CANCELLED"
            job["error"] = {"code": 1, "message": f"{job['name']} was cancelled."}
        else:
            job["state"] = "JOB_STATE_FAILED"
            job["error"] = {
                "code": 13,
                "message": f"The emulator restarted while the job was {short}; {outcome}.",
            }
        for trial in job.get("trials") or []:
            if trial.get("state") in ("ACTIVE", "REQUESTED", "STOPPING"):
                trial["state"] = "INFEASIBLE"
                trial["infeasibleReason"] = "The emulator restarted while the trial was running."
                trial["endTime"] = stamp
        job["endTime"] = stamp

    return apply
