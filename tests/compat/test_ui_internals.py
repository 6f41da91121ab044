"""The Airflow internals the job view uses (``_compat.ui_auth_dependencies``, ``readable_dag_ids``,
``xcom_rows``), each against this cell's Airflow.

No public API says who may read a DAG from a plugin's FastAPI app, nor reads XComs from the API
server, so only a run on every supported release says they still work. Here they run for real: the
API server's own dependencies guard a FastAPI route and decide with the simple auth manager's roles on
tokens it signed (admin and viewer read, a user without a role gets 403, no login 401, a cookie login
as the UI's); the auth manager lists the DAGs a user may read from the metadata DB; and the XComs real
tasks pushed are read back by key, task, map index and DAG, newest first.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from airflow.sdk import DAG, get_current_context, task
from operators.fixtures import airflow_db  # noqa: F401 (the fixture)
from operators.harness import run_dag

from airflow_vertex_dist import _compat

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
SIMPLE = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"


@pytest.fixture
def auth_manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The simple auth manager, with roles (not everyone admin), as the API server creates it."""
    from airflow.api_fastapi import app as api_app

    monkeypatch.setenv("AIRFLOW__CORE__AUTH_MANAGER", SIMPLE)
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "False")
    monkeypatch.setenv("AIRFLOW__API_AUTH__JWT_SECRET", "compat-ui-internals-jwt-secret-" + "x" * 48)
    manager = api_app.create_auth_manager()
    # the signer and the validator are cached per class: both with this secret, none left after
    for cached in (manager._get_token_signer, manager._get_token_validator):
        cached.cache_clear()
    yield manager
    for cached in (manager._get_token_signer, manager._get_token_validator):
        cached.cache_clear()


def _token(manager: Any, role: str | None) -> str:
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return str(manager.generate_jwt(SimpleAuthManagerUser(username=f"user-{role}", role=role)))


@pytest.fixture(scope="module")
def xcom_run() -> Any:
    """A run whose tasks pushed ``view_key``: one task, and a task mapped over 3 indexes."""
    with DAG("internals_ui_xcoms", schedule=None, start_date=START) as dag:

        @task(task_id="one")
        def one() -> None:
            get_current_context()["ti"].xcom_push(key="view_key", value={"n": -1})

        @task(task_id="mapped")
        def mapped(i: int) -> None:
            get_current_context()["ti"].xcom_push(key="view_key", value={"n": i})

        @task(task_id="other_key")
        def other_key() -> None:
            get_current_context()["ti"].xcom_push(key="not_the_key", value={"n": 99})

        one() >> mapped.expand(i=[0, 1, 2])
        other_key()
    return run_dag(dag)


def test_the_view_dependencies_decide_with_the_auth_manager(auth_manager: Any, xcom_run: Any) -> None:
    from fastapi import Depends, FastAPI
    from fastapi.testclient import TestClient

    read_task_instances, get_user = _compat.ui_auth_dependencies()
    app = FastAPI()

    @app.get("/ti/{dag_id}", dependencies=[Depends(read_task_instances)])
    def view(dag_id: str) -> dict[str, str]:
        return {"dag_id": dag_id}

    @app.get("/me")
    def me(user: Any = Depends(get_user)) -> dict[str, str]:  # noqa: B008 - FastAPI's way
        return {"name": user.get_name()}

    client = TestClient(app)
    path = f"/ti/{xcom_run.dag_id}"

    def status(role: str | None) -> int:
        return client.get(path, headers={"Authorization": f"Bearer {_token(auth_manager, role)}"}).status_code

    assert client.get(path).status_code == 401
    assert status("ADMIN") == 200
    assert status("VIEWER") == 200  # the simple auth manager's viewers read every DAG
    assert status(None) == 403  # no role: no DAG
    assert status("") == 403
    client.cookies.set("_token", _token(auth_manager, "VIEWER"))  # the UI's login, a cookie
    assert client.get(path).json() == {"dag_id": xcom_run.dag_id}
    assert client.get("/me").json() == {"name": "user-VIEWER"}


def test_readable_dag_ids_are_the_auth_managers(auth_manager: Any, xcom_run: Any) -> None:
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    viewer = SimpleAuthManagerUser(username="v", role="VIEWER")
    nobody = SimpleAuthManagerUser(username="n", role=None)
    assert xcom_run.dag_id in _compat.readable_dag_ids(viewer)
    assert _compat.readable_dag_ids(nobody) == set()


def test_xcom_rows_reads_what_real_tasks_pushed(xcom_run: Any) -> None:
    dag_id, run_id = xcom_run.dag_id, xcom_run.run_id

    def values(**where: Any) -> list[Any]:
        return [row["value"] for row in _compat.xcom_rows("view_key", **where)]

    assert values(dag_id=dag_id, run_id=run_id, task_id="one", map_index=-1) == [{"n": -1}]
    assert values(dag_id=dag_id, run_id=run_id, task_id="mapped", map_index=1) == [{"n": 1}]
    assert values(dag_id=dag_id, run_id=run_id, task_id="mapped", map_index=7) == []
    rows = _compat.xcom_rows("view_key", dag_ids={dag_id})
    assert len(rows) == 4 and {r["value"]["n"] for r in rows} == {-1, 0, 1, 2}
    assert {(r["dag_id"], r["run_id"]) for r in rows} == {(dag_id, run_id)}
    assert {(r["task_id"], r["map_index"]) for r in rows} == {
        ("one", -1),
        ("mapped", 0),
        ("mapped", 1),
        ("mapped", 2),
    }
    stamps = [r["timestamp"] for r in rows]
    assert all(stamps) and stamps == sorted(stamps, reverse=True)  # newest first
    assert rows[-1]["value"] == {"n": -1}  # "one" ran before the mapped tasks
    assert len(_compat.xcom_rows("view_key", dag_ids={dag_id}, limit=2)) == 2
    assert _compat.xcom_rows("view_key", dag_ids=set()) == []
    assert values(dag_id=dag_id, task_id="other_key") == []  # another key
