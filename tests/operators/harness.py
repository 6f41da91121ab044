"""Running operators and sensors for real: a migrated SQLite metadata DB, ``dag.test()``, the emulator.

``dag.test()`` runs each task through the Task SDK's in-process supervisor with a real task context
(XCom, task_state_store, templates) and runs a deferred task's trigger inline, as the triggerer
would; the ``vertex_dist_default`` connection points the hooks at a local emulator.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tests.polling import poll_until
from vertex_emulator.app import Emulator

__all__ = [
    "CONN_ENV",
    "PY",
    "alive",
    "connection_env",
    "dag_xcom",
    "logged",
    "migrate_db",
    "poll",
    "register_dag",
    "run_dag",
    "share_in_process_api",
    "ti_state",
]

CONN_ENV = "AIRFLOW_CONN_VERTEX_DIST_DEFAULT"
PY = sys.executable

_migrated = False


def migrate_db() -> None:
    """Create the metadata DB of the test-wide AIRFLOW_HOME once per process (and share the in-process
    Execution API, ``share_in_process_api``)."""
    global _migrated
    if _migrated:
        return
    share_in_process_api()
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.utils import db

    db.resetdb()
    DagBundlesManager().sync_bundles_to_db()
    _migrated = True


def share_in_process_api() -> None:
    """One in-process Execution API per test process, as Airflow 3.3's Task SDK keeps it for
    ``dag.test()`` (its supervisor's ``in_process_api_server`` is an ``lru_cache``). Airflow 3.1 and
    3.2 build a new one for every task ``dag.test()`` runs: a FastAPI app whose versioned routes
    (Cadwyn) take seconds of CPU to build, the same work each time, which made those compat cells
    spend most of their time building it (three times the 3.3 cell's CPU). Feature-detected: where
    the function is cached already, nothing changes."""
    from airflow.sdk.execution_time import supervisor

    if not hasattr(supervisor.in_process_api_server, "cache_info"):
        supervisor.in_process_api_server = functools.lru_cache(maxsize=1)(  # type: ignore[assignment]
            supervisor.in_process_api_server
        )


def connection_env(em: Emulator, *, transport: str = "grpc") -> str:
    """The JSON form of a ``vertex_dist`` connection pointing at ``em``."""
    endpoint = em.grpc_target if transport == "grpc" else em.rest_endpoint
    extra = {
        "project": "test-project",
        "location": "us-central1",
        "api_endpoint": endpoint,
        "emulator": True,
        "web_endpoint": em.rest_endpoint,
        "transport": transport,
    }
    return json.dumps({"conn_type": "vertex_dist", "extra": extra})


def register_dag(dag: Any) -> None:
    """Write ``dag`` to the metadata DB as the DAG processor would (dag.test() needs it serialized)."""
    from airflow.dag_processing.collection import update_dag_parsing_results_in_db
    from airflow.serialization.serialized_objects import LazyDeserializedDAG
    from airflow.utils.session import create_session

    with create_session() as session:
        update_dag_parsing_results_in_db(
            "dags-folder", None, [LazyDeserializedDAG.from_dag(dag)], {}, None, set(), session=session
        )


def run_dag(dag: Any, *, logical_date: datetime | None = None) -> Any:
    """Register and run ``dag`` once with ``dag.test()``; the DagRun. The same ``logical_date`` twice
    runs the same task instances again (a new try each)."""
    register_dag(dag)
    when = logical_date or datetime.now(timezone.utc)
    return dag.test(logical_date=when, run_after=when)


def ti_state(dr: Any, task_id: str) -> str:
    from airflow.utils.session import create_session

    with create_session() as session:
        for ti in dr.get_task_instances(session=session):
            if ti.task_id == task_id:
                return str(ti.state)
    raise KeyError(task_id)


def dag_xcom(dr: Any, task_id: str, key: str = "return_value") -> Any:
    """An XCom value of a task of the run ``dr`` (deserialized JSON)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.execute(
            XComModel.get_many(
                key=key, run_id=dr.run_id, dag_ids=dr.dag_id, task_ids=task_id, map_indexes=-1
            ).with_only_columns(XComModel.value)
        ).first()
    if row is None:
        return None
    value = row[0]
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            return value  # extra-link values are stored as the bare URL
    return value


def poll(check: Callable[[], Any], *, timeout: float = 30.0, interval: float = 0.05, what: str = "") -> Any:
    """Call ``check`` until it returns a truthy value; TimeoutError after ``timeout`` seconds."""
    return poll_until(check, timeout=timeout, interval=interval, what=what)


def logged(capfd: Any) -> str:
    """Everything the run printed so far (dag.test() prints the task logs)."""
    captured = capfd.readouterr()
    return str(captured.out) + str(captured.err)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("State:"):
            return "Z" not in line.split()[1]
    return True


@contextmanager
def env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
