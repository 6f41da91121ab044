"""The Celery profile of the stack: how production deployments that outgrew one machine run Airflow.

PostgreSQL (as in :class:`~tests.stack.stack.AirflowStack`), Redis as the Celery broker, two
``airflow celery worker``, two ``airflow scheduler``, two ``airflow triggerer``, the dag-processor, the
api-server and the emulator, each its own process group carrying the stack's marker.

Redis is the distribution's ``redis-server`` (installed with apt-get when missing and we are root, as
PostgreSQL is), run in the foreground on a free loopback port with nothing persisted. The extra Python
packages (the Celery provider and the Redis client) are the project's ``celery`` dependency group, which
``make install`` installs.

The settings that differ from the LocalExecutor profile are the executor's, and two of the scheduler's
that make a dead scheduler's work move within the tests' time (Airflow's defaults are minutes):
``orphaned_tasks_check_interval`` (how often a live scheduler adopts the tasks of a dead one) and
``scheduler_health_check_threshold`` (how old a heartbeat makes a scheduler dead).
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Any

from tests.polling import poll_until

from .procs import Proc, StackError, apt_install, free_port, tail
from .stack import AirflowStack

__all__ = ["WORKERS", "CeleryStack", "redis_server"]

#: the keys (in ``CeleryStack.procs``) of the two Celery workers
WORKERS = ("worker-1", "worker-2")


def redis_server() -> Path:
    """The ``redis-server`` binary, installing the distribution's package when missing."""
    found = shutil.which("redis-server") or next(
        (p for p in ("/usr/bin/redis-server", "/usr/sbin/redis-server") if Path(p).exists()), None
    )
    if found is None:
        apt_install("redis-server")
        found = shutil.which("redis-server") or (
            "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
        )
    if found is None:
        raise StackError("Redis is not installed (no redis-server) and could not be installed")
    return Path(found)


class CeleryStack(AirflowStack):
    """CeleryExecutor on Redis: two workers, two schedulers, two triggerers (see the module doc)."""

    def __init__(self, dags_folder: Path, *, worker_concurrency: int = 4, **kwargs: Any) -> None:
        super().__init__(dags_folder, **kwargs)
        self.worker_concurrency = worker_concurrency
        self.redis_port = free_port()

    def airflow_env(self) -> dict[str, str]:
        env = super().airflow_env()
        env.update(
            {
                "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
                "AIRFLOW__CELERY__BROKER_URL": f"redis://127.0.0.1:{self.redis_port}/0",
                "AIRFLOW__CELERY__RESULT_BACKEND": (
                    f"db+postgresql+psycopg2://airflow@127.0.0.1:{self.pg_port}/postgres"
                ),
                "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(self.worker_concurrency),
                "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "10",
                "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "15",
            }
        )
        env.update(self.extra_env)
        return env

    def services(self) -> list[tuple[str, str, list[str]]]:
        workers = [(key, "celery", ["worker", "--celery-hostname", f"{key}@%h"]) for key in WORKERS]
        return [
            ("api-server", "api-server", []),
            ("dag-processor", "dag-processor", []),
            ("scheduler-1", "scheduler", []),
            ("scheduler-2", "scheduler", []),
            ("triggerer-1", "triggerer", []),
            ("triggerer-2", "triggerer", []),
            *workers,
        ]

    def start_backing_services(self) -> None:
        """Redis, on a free loopback port, nothing written to disk, stopped with the stack."""
        binary = redis_server()
        work = self.root / "redis"
        work.mkdir()
        argv = [
            str(binary),
            "--port", str(self.redis_port),
            "--bind", "127.0.0.1",
            "--protected-mode", "yes",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(work),
            "--daemonize", "no",
        ]  # fmt: skip
        log = self.root / "redis.log"
        self.procs["redis"] = Proc("redis", argv, self.base_env(), log).start()

        def ready() -> bool:
            if not self.procs["redis"].alive():
                raise StackError(f"redis-server exited:\n{tail(log)}")
            try:
                with socket.create_connection(("127.0.0.1", self.redis_port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    return sock.recv(16).startswith(b"+PONG")
            except OSError:
                return False

        poll_until(ready, timeout=60, interval=0.2, what="Redis answering PING")

    def worker_of_pid(self, pid: int) -> str | None:
        """The key of the Celery worker whose process tree holds ``pid`` (a task's process)."""
        for key in WORKERS:
            proc = self.procs.get(key)
            if proc is not None and proc.alive() and pid in self.tree_pids(proc.pid):
                return key
        return None
