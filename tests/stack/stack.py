"""A real Airflow stack for the reliability tests: PostgreSQL, the four Airflow services, the emulator.

Every piece is its own OS process started from an argv list (never a shell), each in its own session
so it can be signalled as a group:

* PostgreSQL from the distribution's package (installed with apt-get when missing and we are root), a
  private data dir in a temp dir, listening on 127.0.0.1 on a free port, run as the ``postgres`` user
  when we are root (initdb refuses root);
* ``airflow db migrate`` once, then ``airflow scheduler`` (LocalExecutor), ``airflow triggerer``,
  ``airflow dag-processor`` and ``airflow api-server``;
* ``airflow-vertex-dist emulator`` on free loopback ports; the ``vertex_dist_default`` connection
  points at it.

Every process carries the environment variable ``AVD_STACK_MARKER=<random id>``, so teardown can prove
that nothing is left: ``AirflowStack.marked_pids`` scans ``/proc`` for it. Replicas start from a
clean environment; the emulator is told to pass the marker on (``--pass-env AVD_STACK_MARKER``), so
every replica, and everything a replica forks, carries it too.

DAG runs are triggered and awaited through Airflow's REST API (``/api/v2``) with a bearer token from
the simple auth manager (``[core] simple_auth_manager_all_admins``: ``GET /auth/token``).
"""

from __future__ import annotations

import glob
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
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

__all__ = ["AirflowStack", "Proc", "StackError", "apt_install", "free_port", "poll_until"]

VENV_BIN = Path(sys.executable).parent
MARKER_ENV = "AVD_STACK_MARKER"
SERVICES = ("api-server", "dag-processor", "scheduler", "triggerer")
TERMINAL_RUN_STATES = {"success", "failed"}


class StackError(RuntimeError):
    """The stack could not start or misbehaved; the message quotes the relevant log tail."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def poll_until(check: Callable[[], Any], *, timeout: float, interval: float = 0.5, what: str = "") -> Any:
    """Call ``check`` until it returns something truthy; TimeoutError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"not reached within {timeout:g}s: {what or check}")
        time.sleep(interval)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def apt_install(package: str) -> None:
    """Install a distribution package with apt-get, when we are root and have apt-get (else nothing:
    the caller then reports what is missing)."""
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-q"], check=False, env=env, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-q", package], check=True, env=env, capture_output=True)


def _pg_bin() -> Path:
    """The directory of initdb/postgres, installing the distribution's package when missing."""

    def find() -> Path | None:
        for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
            if (Path(candidate) / "initdb").exists() and (Path(candidate) / "postgres").exists():
                return Path(candidate)
        initdb = shutil.which("initdb")
        if initdb and (Path(initdb).resolve().parent / "postgres").exists():
            return Path(initdb).resolve().parent
        return None

    found = find()
    if found is None:
        apt_install("postgresql")
        found = find()
    if found is None:
        raise StackError("PostgreSQL is not installed (no initdb/postgres) and could not be installed")
    return found


class Proc:
    """One started process: argv, log file, Popen (own session, so a group to signal)."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.argv, self.env, self.log = name, argv, env, log
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.argv,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal_group(self, sig: int) -> None:
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, grace: float = 15.0, sig: int = signal.SIGTERM) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self.signal_group(sig)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        self.signal_group(signal.SIGKILL)  # whatever is left of the group
        try:
            self.popen.wait(10)
        except subprocess.TimeoutExpired:
            pass


class AirflowStack:
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
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

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
        pg_bin = _pg_bin()
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
                raise StackError(f"postgres exited:\n{_tail(self.root / 'postgres.log')}")
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
            str(VENV_BIN / "airflow-vertex-dist"),
            "emulator",
            "--state-dir", str(self.emulator_state),
            "--rest-port", str(rest_port),
            "--grpc-port", str(grpc_port),
            "--storage-port", "0",
            "--pass-env", MARKER_ENV,
            *self.emulator_args,
        ]  # fmt: skip
        proc = Proc("emulator", argv, self.base_env(), log).start()
        self.procs["emulator"] = proc

        def ready() -> str | None:
            if not proc.alive():
                raise StackError(f"emulator exited:\n{_tail(log)}")
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
            raise StackError(f"airflow db migrate failed ({rc}):\n{_tail(log)}")

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
                    raise StackError(f"{name} exited:\n{_tail(proc.log)}")
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

    # -- REST API -------------------------------------------------------------------------------
    def token(self) -> str:
        if self._token is None:
            resp = self._http.get(f"{self.api_url}/auth/token")
            resp.raise_for_status()
            self._token = str(resp.json()["access_token"])
        return self._token

    def api(self, method: str, path: str, *, json_body: Any = None, params: Any = None) -> Any:
        resp = self._http.request(
            method,
            f"{self.api_url}{path}",
            json=json_body,
            params=params,
            headers={"Authorization": f"Bearer {self.token()}"},
        )
        if resp.status_code >= 400:
            raise StackError(f"{method} {path} -> {resp.status_code}: {resp.text[:2000]}")
        return resp.json() if resp.content else None

    def trigger(self, dag_id: str, conf: dict[str, Any] | None = None, run_id: str | None = None) -> str:
        body: dict[str, Any] = {"logical_date": None, "conf": conf or {}}
        if run_id:
            body["dag_run_id"] = run_id
        return str(self.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json_body=body)["dag_run_id"])

    def run_state(self, dag_id: str, run_id: str) -> str:
        return str(self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}")["state"])

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 180) -> str:
        def done() -> str | None:
            state = self.run_state(dag_id, run_id)
            return state if state in TERMINAL_RUN_STATES else None

        return str(poll_until(done, timeout=timeout, interval=1.0, what=f"run {dag_id}/{run_id} finished"))

    def task_instance(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        path = f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"
        return dict(self.api("GET", path))

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int) -> str:
        run = quote(run_id, safe="")
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run}/taskInstances/{task_id}/logs/{try_number}"
        resp = self._http.get(
            f"{self.api_url}{path}",
            params={"full_content": "true"},
            headers={"Authorization": f"Bearer {self.token()}", "Accept": "application/json"},
        )
        resp.raise_for_status()
        return resp.text

    def wait_task_state(
        self, dag_id: str, run_id: str, task_id: str, states: set[str], timeout: float = 120
    ) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            ti = self.task_instance(dag_id, run_id, task_id)
            return ti if ti.get("state") in states else None

        found: dict[str, Any] = poll_until(
            reached, timeout=timeout, interval=0.5, what=f"{dag_id}/{run_id}/{task_id} in {sorted(states)}"
        )
        return found

    # -- emulator -------------------------------------------------------------------------------
    def emulator_jobs(self, filter_: str = "", kind: str = "customJobs") -> list[dict[str, Any]]:
        """Every job of the stack's project (all pages), read over the emulator's REST API."""
        jobs: list[dict[str, Any]] = []
        token = ""
        url = f"{self.rest_endpoint}/v1/projects/stack-project/locations/us-central1/{kind}"
        while True:
            params = {"filter": filter_, "pageSize": "100", "pageToken": token}

            def page(params: dict[str, str] = params) -> httpx.Response | None:
                resp = self._http.get(url, params=params)
                if resp.status_code in (429, 500, 503, 504):  # an injected fault: ask again
                    return None
                return resp

            resp = poll_until(page, timeout=60, interval=0.1, what=f"List {kind} without a fault")
            resp.raise_for_status()
            data = resp.json()
            jobs.extend(data.get(kind, []))
            token = data.get("nextPageToken", "")
            if not token:
                return jobs

    def emulator_stats(self) -> dict[str, Any]:
        resp = self._http.get(f"{self.rest_endpoint}/emulator/stats")
        resp.raise_for_status()
        return dict(resp.json())

    def set_faults(self, changes: dict[str, Any]) -> None:
        resp = self._http.put(f"{self.rest_endpoint}/emulator/faults", json=changes)
        resp.raise_for_status()

    # -- processes ------------------------------------------------------------------------------
    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Signal a service's process group (``kill -9`` by default) and wait for it to exit."""
        proc = self.procs[name]
        proc.signal_group(sig)
        assert proc.popen is not None
        proc.popen.wait(30)

    @staticmethod
    def _stat(pid: int) -> tuple[str, int, int] | None:
        """(state, parent pid, session id) of a process, or None when it is gone."""
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return fields[0], int(fields[1]), int(fields[3])
        except (OSError, ValueError, IndexError):
            return None

    @staticmethod
    def _all_pids() -> list[int]:
        return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]

    def tree_pids(self, root: int) -> list[int]:
        """``root`` and its live descendants (zombies excluded), whatever their environment."""
        children: dict[int, list[int]] = {}
        alive = set()
        for pid in self._all_pids():
            stat = self._stat(pid)
            if stat is None or stat[0] == "Z":
                continue
            alive.add(pid)
            children.setdefault(stat[1], []).append(pid)
        found, todo = [], [root]
        while todo:
            pid = todo.pop()
            if pid in alive:
                found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def alive(self, pids: Iterable[int]) -> list[int]:
        """Those of ``pids`` still running (zombies excluded)."""
        return [pid for pid in pids if (stat := self._stat(pid)) is not None and stat[0] != "Z"]

    def marked_pids(self) -> list[int]:
        """Live processes of this stack (zombies excluded): those carrying its marker in their
        environment, and those in the session of one of its processes. The second catches what the
        first misses: a process that rewrites its title (Celery's pool processes and Airflow's task
        processes do, with setproctitle) can overwrite the environment /proc shows for it."""
        needle = f"{MARKER_ENV}={self.marker}".encode()
        sessions = {proc.popen.pid for proc in self.procs.values() if proc.popen is not None}
        found = []
        for pid in self._all_pids():
            if pid == os.getpid():
                continue
            stat = self._stat(pid)
            if stat is None or stat[0] == "Z":
                continue
            if stat[2] not in sessions:
                try:
                    if needle not in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                        continue
                except OSError:
                    continue
            found.append(pid)
        return found

    def replica_pids(self, jobs: Iterable[Mapping[str, Any]] | None = None) -> list[int]:
        """Live replica processes of the emulator (their cwd is under the emulator's work dir); with
        ``jobs`` (emulator job dicts), only those of these jobs (the work dir's first part is the job id)."""
        work = str(self.emulator_state / "work")
        ids = None if jobs is None else {str(j["name"]).rsplit("/", 1)[1] for j in jobs}
        out = []
        for pid in self.marked_pids():
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue  # gone meanwhile
            if ids is None:
                if cwd.startswith(work):
                    out.append(pid)
            elif cwd.startswith(work + "/") and cwd[len(work) + 1 :].split("/", 1)[0] in ids:
                out.append(pid)
        return out

    def pids_of_cmd(self, needle: str) -> list[int]:
        out = []
        for pid in self.marked_pids():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if needle in cmd:
                out.append(pid)
        return out

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
