"""A real Airflow stack for the reliability tests: PostgreSQL, the four Airflow services, the emulator.

Every piece is its own OS process started from an argv list (never a shell), each in its own session
so it can be signalled as a group:

* PostgreSQL from the distribution's package (installed with apt-get when missing and we are root), a
  private data dir in a temp dir, listening on 127.0.0.1 on a free port, run as the ``postgres`` user
  when we are root (initdb refuses root);
* ``airflow db migrate`` once, then ``airflow scheduler`` (LocalExecutor), ``airflow triggerer``,
  ``airflow dag-processor`` and ``airflow api-server``;
* ``vertex-emulator`` on free loopback ports; the ``vertex_dist_default`` connection
  points at it.

Every process carries the environment variable ``AVD_STACK_MARKER=<random id>``, so teardown can prove
that nothing is left: ``AirflowStack.marked_pids`` scans ``/proc`` for it. Replicas start from a
clean environment; the emulator is told to pass the marker on (``--pass-env AVD_STACK_MARKER``), so
every replica, and everything a replica forks, carries it too.

DAG runs are triggered and awaited through Airflow's REST API (``/api/v2``) with a bearer token from
the simple auth manager (``[core] simple_auth_manager_all_admins``: ``GET /auth/token``): the methods
of ``airflow_api.py``'s ``AirflowApi``; the emulator is read and steered through
``emulator_client.py``'s ``EmulatorClient``. ``AirflowStack`` takes both in, beside ``procs.py``'s
``ProcessScan``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from tests.polling import poll_until

from .airflow_api import AirflowApi
from .emulator_client import EmulatorClient
from .procs import MARKER_ENV, Proc, ProcessScan, StackError, free_port, postgres_bin_dir, tail

__all__ = ["SHORT_TRAINING", "AirflowStack"]

VENV_BIN = Path(sys.executable).parent
SERVICES = ("api-server", "dag-processor", "scheduler", "triggerer")
#: The code of a backfill's runs (their conf's ``code``): a three-second training that prints a line.
SHORT_TRAINING = "import time; time.sleep(3); print('trained')"


class AirflowStack(ProcessScan, AirflowApi, EmulatorClient):
    """PostgreSQL + scheduler + triggerer + dag-processor + api-server + emulator, on loopback."""

    def __init__(
        self,
        dags_folder: Path,
        *,
        extra_env: dict[str, str] | None = None,
        emulator_args: Iterable[str] = (),
        parallelism: int = 8,
        conn_extra: dict[str, Any] | None = None,
    ) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="avd-stack-"))
        os.chmod(self.root, 0o755)  # the postgres user must reach its data dir below
        self.dags_folder = dags_folder
        self.marker = secrets.token_hex(8)
        self.extra_env = dict(extra_env or {})
        self.emulator_args = list(emulator_args)
        self.parallelism = parallelism
        self.conn_extra = dict(conn_extra or {})
        self.procs: dict[str, Proc] = {}
        self.pg_port = free_port()
        self.api_port = free_port()
        self.emulator_state = self.root / "emulator-state"
        self.rest_endpoint = ""
        self.grpc_target = ""
        self._token: str | None = None
        self._http = httpx.Client(timeout=120.0)
        # one set of secrets for every process: tokens signed by one must validate in the others
        self._api_secret = secrets.token_hex(16)
        self._jwt_secret = secrets.token_hex(32)
        self.timings: dict[str, float] = {}

    # -- environment ----------------------------------------------------------------------------
    def base_env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AIRFLOW", "PYTEST", "AVD_")) and k not in ("COV_CORE_SOURCE",)
        }
        env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
        env[MARKER_ENV] = self.marker
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def airflow_env(self) -> dict[str, str]:
        api = f"http://127.0.0.1:{self.api_port}"
        home = self.root / "airflow"
        conn_extra = {
            "project": "stack-project",
            "location": "us-central1",
            "api_endpoint": self.grpc_target,
            "emulator": True,
            "web_endpoint": self.rest_endpoint,
            "transport": "grpc",
            **self.conn_extra,
        }
        env = self.base_env()
        env.update(
            {
                "AIRFLOW_HOME": str(home),
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__PARALLELISM": str(self.parallelism),
                "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                "AIRFLOW__CORE__AUTH_MANAGER": (
                    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
                ),
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{api}/execution/",
                "AIRFLOW__CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL": "5",
                "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "1",
                "AIRFLOW__API__BASE_URL": api,
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__PORT": str(self.api_port),
                "AIRFLOW__API__WORKERS": "1",
                "AIRFLOW__API__SECRET_KEY": self._api_secret,
                "AIRFLOW__API_AUTH__JWT_SECRET": self._jwt_secret,
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": (
                    f"postgresql+psycopg2://airflow@127.0.0.1:{self.pg_port}/postgres"
                ),
                "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
                "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
                "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "3",
                "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "2",
                "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "20",
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "10",
                "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "60",
                "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
                "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
                "AIRFLOW_CONN_VERTEX_DIST_DEFAULT": json.dumps(
                    {"conn_type": "vertex_dist", "extra": conn_extra}
                ),
            }
        )
        env.update(self.extra_env)
        return env

    @property
    def log_folder(self) -> Path:
        return self.root / "airflow" / "logs"

    # -- start ----------------------------------------------------------------------------------
    def start(self) -> AirflowStack:
        t0 = time.monotonic()
        try:
            self._start_postgres()
            self.timings["postgres_s"] = time.monotonic() - t0
            self.start_backing_services()
            self.start_emulator()
            t1 = time.monotonic()
            self._migrate()
            self.timings["migrate_s"] = time.monotonic() - t1
            for key, name, args in self.services():
                self.start_service(name, key=key, args=args)
            self._wait_api()
            self.wait_dags_parsed()
        except BaseException:
            self.stop()
            raise
        self.timings["start_s"] = time.monotonic() - t0
        return self

    def services(self) -> list[tuple[str, str, list[str]]]:
        """The Airflow services to start, in order: (key in :attr:`procs`, ``airflow`` command, args)."""
        return [(name, name, []) for name in SERVICES]

    def start_backing_services(self) -> None:
        """What the profile needs besides PostgreSQL, started before the migration (none here)."""

    def _start_postgres(self) -> None:
        pg_bin = postgres_bin_dir()
        pg_dir = self.root / "pg"
        data, sock = pg_dir / "data", pg_dir / "sock"
        sock.mkdir(parents=True)
        as_user: list[str] = []
        if os.geteuid() == 0:
            import pwd

            pw = pwd.getpwnam("postgres")
            for path in (pg_dir, sock):
                os.chown(path, pw.pw_uid, pw.pw_gid)
            as_user = ["runuser", "-u", "postgres", "--"]
        env = self.base_env()
        init = subprocess.run(
            [*as_user, str(pg_bin / "initdb"), "-D", str(data), "-U", "airflow", "-A", "trust", "-E", "UTF8",
             "--no-sync"],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if init.returncode != 0:
            raise StackError(f"initdb failed: {init.stdout}\n{init.stderr}")
        argv = [
            *as_user,
            str(pg_bin / "postgres"),
            "-D", str(data),
            "-p", str(self.pg_port),
            "-k", str(sock),
            "-c", "listen_addresses=127.0.0.1",
            "-c", "fsync=off",
            "-c", "synchronous_commit=off",
            "-c", "full_page_writes=off",
            "-c", "max_connections=200",
        ]  # fmt: skip
        self.procs["postgres"] = Proc("postgres", argv, env, self.root / "postgres.log").start()

        def ready() -> bool:
            if not self.procs["postgres"].alive():
                raise StackError(f"postgres exited:\n{tail(self.root / 'postgres.log')}")
            try:
                with socket.create_connection(("127.0.0.1", self.pg_port), timeout=1):
                    pass
            except OSError:
                return False
            check = subprocess.run(
                [str(pg_bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", "airflow"],
                capture_output=True, check=False,
            )  # fmt: skip
            return check.returncode == 0

        poll_until(ready, timeout=60, interval=0.2, what="PostgreSQL accepting connections")

    def start_emulator(self) -> Proc:
        """Start (or restart, on the same state dir and ports) the emulator process."""
        log = self.root / "emulator.log"
        offset = log.stat().st_size if log.exists() else 0
        rest_port = int(self.rest_endpoint.rsplit(":", 1)[1]) if self.rest_endpoint else 0
        grpc_port = int(self.grpc_target.rsplit(":", 1)[1]) if self.grpc_target else 0
        argv = [
            str(VENV_BIN / "vertex-emulator"),
            "--state-dir", str(self.emulator_state),
            "--rest-port", str(rest_port),
            "--grpc-port", str(grpc_port),
            "--storage-port", "0",
            "--pass-env", MARKER_ENV,
            "--provisioning-seconds", "0",  # the suite's timings were set without one
            *self.emulator_args,
        ]  # fmt: skip
        proc = Proc("emulator", argv, self.base_env(), log).start()
        self.procs["emulator"] = proc

        def ready() -> str | None:
            if not proc.alive():
                raise StackError(f"emulator exited:\n{tail(log)}")
            with log.open("rb") as fh:
                fh.seek(offset)
                for line in fh.read().decode(errors="replace").splitlines():
                    if line.startswith("emulator ready "):
                        return line
            return None

        line = poll_until(ready, timeout=60, interval=0.1, what="emulator ready line")
        fields = dict(part.split("=", 1) for part in line.split()[2:])
        self.grpc_target, self.rest_endpoint = fields["grpc"], fields["rest"]
        return proc

    def _migrate(self) -> None:
        log = self.root / "migrate.log"
        with log.open("wb") as out:
            rc = subprocess.run(
                [str(VENV_BIN / "airflow"), "db", "migrate"],
                env=self.airflow_env(), stdout=out, stderr=subprocess.STDOUT, check=False, timeout=600,
            ).returncode  # fmt: skip
        if rc != 0:
            raise StackError(f"airflow db migrate failed ({rc}):\n{tail(log)}")

    def start_service(self, name: str, *, key: str | None = None, args: Iterable[str] = ()) -> Proc:
        """Start ``airflow <name> [args]`` as ``self.procs[key]`` (``key`` defaults to ``name``; give
        another to run a second instance, e.g. ``"triggerer-2"``).

        Each triggerer and Celery worker serves its logs on a port of its own (Airflow's defaults, 8794
        and 8793, are one per host: a second instance, or another stack on the machine, would find
        them taken).
        """
        key = key or name
        argv = [str(VENV_BIN / "airflow"), name, *args]
        if name == "api-server":
            argv += ["--host", "127.0.0.1", "--port", str(self.api_port), "--workers", "1"]
        env = self.airflow_env()
        if name == "triggerer":
            env["AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT"] = str(free_port())
        if name == "celery" and list(args)[:1] == ["worker"]:  # 8793 by default, one per host
            env["AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"] = str(free_port())
        proc = Proc(key, argv, env, self.root / f"{key}.log").start()
        self.procs[key] = proc
        return proc

    def _wait_api(self) -> None:
        def up() -> bool:
            for name, proc in self.procs.items():
                if not proc.alive():
                    raise StackError(f"{name} exited:\n{tail(proc.log)}")
            try:
                return self._http.get(f"{self.api_url}/api/v2/monitor/health").status_code == 200
            except httpx.HTTPError:
                return False

        poll_until(up, timeout=180, interval=0.5, what="api-server health")

    def wait_dags_parsed(self, dag_ids: Iterable[str] | None = None, timeout: float = 180) -> None:
        wanted = set(dag_ids) if dag_ids is not None else None

        def parsed() -> bool:
            dags = {d["dag_id"] for d in self.api("GET", "/api/v2/dags", params={"limit": 100})["dags"]}
            if wanted is None:
                return bool(dags)
            return wanted <= dags

        poll_until(parsed, timeout=timeout, interval=1.0, what=f"DAGs parsed: {wanted or 'any'}")

    # -- processes ------------------------------------------------------------------------------
    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Signal a service's process group (``kill -9`` by default) and wait for it to exit."""
        proc = self.procs[name]
        proc.signal_group(sig)
        assert proc.popen is not None
        proc.popen.wait(30)

    def stop(self) -> list[int]:
        """Stop everything (Airflow services, emulator, then PostgreSQL); returns pids still alive."""
        # the Airflow services (every instance; schedulers first, the api-server last), the emulator,
        # a profile's broker, then PostgreSQL
        order = ("scheduler", "worker", "triggerer", "dag-processor", "api-server", "emulator", "redis")
        names = [n for n in self.procs if n != "postgres"]
        for name in sorted(names, key=lambda n: next((i for i, p in enumerate(order) if p in n), 0)):
            self.procs[name].stop()
        if "postgres" in self.procs:
            self.procs["postgres"].stop(sig=signal.SIGINT)  # fast shutdown
        self._http.close()
        try:
            poll_until(lambda: not self.marked_pids(), timeout=15, interval=0.2, what="no process left")
            return []
        except TimeoutError:
            left = self.marked_pids()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
