"""A CustomJob made ready to run, while it is PENDING: its scheduling settings and its replicas.

- ``read_schedule``: the replicas of its pools, ``scheduling.timeout`` (default 7 days, counted from
  RUNNING), whether a worker restart restarts the job (``restartJobOnWorkerRestart`` without
  ``disableRetries``), and whether it runs on Spot VMs.
- ``add_slots`` makes each replica ready to start (``replica_slots.Slot``):
- Each replica gets a free port on ``127.0.0.1`` (whatever address the API binds): ``CLUSTER_SPEC``/
  ``TF_CONFIG`` hold ``host:port`` addresses the replicas can really bind and connect to.
- The job's output directories (``baseOutputDirectory``) are created under the local ``gs://`` root.
- A replica starts from a clean environment: only what a local process needs (``cluster.local_env``:
  ``PATH``, ``HOME``, locale...) and the names in ``config.pass_env`` come from the emulator's
  environment; then the pool's ``env`` (with ``$(VAR)`` expansion) and the service's variables
  (cluster.py), which win over both.
- What each replica runs (container command, image map, python package -- installed here, see
  packages.py --, the idle Reduction Server placeholder) is built by replica_command.py; its working
  directory is ``<state_dir>/work/<job id>/<replica key>``, its log ``<log dir>/<replica key>.log``.
- ``web_access_uris``: with ``jobSpec.enableWebAccess``, every replica key maps to
  ``<web_base_url>/web/<job name>/<key>``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_emulator.capacity.gpus import provisioning
from vertex_emulator.core.config import EmulatorConfig
from vertex_emulator.core.gcs import to_local_path
from vertex_emulator.core.timefmt import parse_duration_seconds
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
from vertex_emulator.runtime.driver import JobError
from vertex_emulator.runtime.procs import free_ports
from vertex_emulator.runtime.replica_command import check_hypertune, pool_env, replica_command
from vertex_emulator.runtime.replica_slots import Slot

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "REPLICA_HOST",
    "JobPlace",
    "Schedule",
    "add_slots",
    "parse_duration",
    "read_schedule",
    "web_access_uris",
]

DEFAULT_TIMEOUT_S = 7 * 24 * 3600.0
#: replicas always get loopback addresses, whatever interface the API listens on
REPLICA_HOST = "127.0.0.1"


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


@dataclass(frozen=True)
class Schedule:
    """What a CustomJob's spec says of how it runs."""

    replicas: list[Replica]
    timeout_s: float
    #: a worker restart (an injected crash, locally) restarts the whole job
    restart_on_failure: bool
    #: the job runs on Spot VMs and can be preempted
    spot: bool


def read_schedule(spec: Mapping[str, Any]) -> Schedule:
    """The job's replicas and scheduling settings (JobError, code 3: the spec breaks a rule)."""
    try:
        replicas = replicas_of(spec)
        sched = spec.get("scheduling") or {}
        timeout_s = parse_duration(
            sched.get("timeout"), field="jobSpec.scheduling.timeout", default=DEFAULT_TIMEOUT_S
        )
    except ValueError as exc:
        raise JobError(3, str(exc)) from None
    restart = bool(sched.get("restartJobOnWorkerRestart")) and not bool(sched.get("disableRetries"))
    return Schedule(list(replicas), timeout_s, restart, provisioning(spec) == "spot")


def web_access_uris(
    spec: Mapping[str, Any], config: EmulatorConfig, job_name: str, keys: Iterable[str]
) -> dict[str, str]:
    """``webAccessUris``: replica key -> its page, when ``jobSpec.enableWebAccess`` is set (else none)."""
    if not spec.get("enableWebAccess"):
        return {}
    default = f"http://{config.host}:{config.rest_port}"
    base = (config.web_base_url or default).rstrip("/")
    return {key: f"{base}/web/{job_name}/{key}" for key in keys}


@dataclass(frozen=True)
class JobPlace:
    """Where a CustomJob's replicas run and what they are told of the job."""

    job_id: str
    config: EmulatorConfig
    #: the job's log directory (replica logs, package installs, metrics files)
    log_dir: Path
    #: where replica ``key`` writes its cloudml-hypertune metrics
    metric_file: Callable[[str], Path]
    #: the tuning trial the job runs, or None
    trial: str | None
    #: set when a cancel or close comes (a package install stops)
    stop: threading.Event
    #: the job's resource name (``CLOUD_ML_PROJECT_ID``, ``CLOUD_ML_REGION``)
    job_name: str = ""


def _make_output_dirs(spec: Mapping[str, Any], config: EmulatorConfig) -> None:
    base_uri = (spec.get("baseOutputDirectory") or {}).get("outputUriPrefix")
    try:
        for uri in output_dirs(base_uri).values():
            to_local_path(uri, config.gcs_root, field="jobSpec.baseOutputDirectory").mkdir(
                parents=True, exist_ok=True
            )
    except (ValueError, OSError) as exc:
        raise JobError(3, f"jobSpec.baseOutputDirectory: {exc}") from None


def add_slots(
    slots: dict[str, Slot],
    spec: Mapping[str, Any],
    replicas: Sequence[Replica],
    place: JobPlace,
    *,
    played: bool = False,
) -> None:
    """Add a slot to ``slots`` for every replica, in order (JobError: the job cannot run). A ``played``
    job's replicas run no code (a scenario's ``job_outcome``): none gets a command, so an image with no
    command and no image map entry plays as well as any, and no Python package is installed."""
    config = place.config
    ports = free_ports(len(replicas), REPLICA_HOST)
    addresses = {rep.key: f"{REPLICA_HOST}:{port}" for rep, port in zip(replicas, ports, strict=True)}
    job_dict = job_spec_as_dict(spec)
    logs = place.log_dir
    logs.mkdir(parents=True, exist_ok=True)
    base_env = local_env(os.environ, config.pass_env)
    _make_output_dirs(spec, config)
    installed: dict[int, Path] = {}
    for rep in replicas:
        pool_field = f"jobSpec.workerPoolSpecs[{rep.pool}]"
        try:
            vertex_env = replica_env(
                job_id=place.job_id,
                job_spec=spec,
                replicas=replicas,
                replica=rep,
                addresses=addresses,
                job=job_dict,
                gcs_root=config.gcs_root,
                metric_file=place.metric_file(rep.key),
                trial=place.trial,
                storage_host=config.storage_endpoint,
                job_name=place.job_name,
            )
        except ValueError as exc:
            raise JobError(3, str(exc)) from None
        service = service_scope(vertex_env)
        try:
            user_env = expand_env(pool_env(rep), service, field=f"{pool_field}.env")
        except ValueError as exc:
            raise JobError(3, str(exc)) from None
        env = {**base_env, **user_env, **vertex_env}
        argv, extra_path = (
            ([], None)
            if played
            else replica_command(
                rep,
                pool_field=pool_field,
                config=config,
                job_id=place.job_id,
                log_dir=logs,
                installed=installed,
                stop=place.stop,
                scope={**user_env, **service},
                env=env,  # a pool's package install gets its first replica's clean environment
            )
        )
        if extra_path is not None:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(extra_path), env.get("PYTHONPATH")) if p)
        cwd = config.state_dir / "work" / place.job_id / rep.key
        cwd.mkdir(parents=True, exist_ok=True)
        if place.trial is not None and rep.is_primary and not played:
            check_hypertune(argv, env, cwd)
        slots[rep.key] = Slot(
            replica=rep,
            argv=argv,
            env=env,
            cwd=cwd,
            log_path=logs / f"{rep.key}.log",
            address=addresses[rep.key],
        )
