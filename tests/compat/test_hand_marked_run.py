"""A run marked failed by hand through Airflow's own REST API cancels its tasks' jobs.

Before Airflow 3.3 the API fires only the run-level listener hook (``on_dag_run_failed``, ``msg=""``)
for a run marked by hand: the package's listener is then the only thing that stops the run's jobs.
Here the request goes through the real route of this cell's Airflow (its FastAPI app, in process, with
the simple auth manager's token), not a call of the hook function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from operators.fixtures import airflow_db, emulator, vertex_conn  # noqa: F401 (the fixtures)
from operators.test_user_actions import hand_on_a_waiting_task, orm_dag_run

from vertex_emulator.app import Emulator

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db"), pytest.mark.timeout(600)]


def api_client(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, dict[str, str]]:
    """This Airflow's public REST API in process, and the headers of an admin's token."""
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "True")
    from airflow.api_fastapi.app import create_app
    from fastapi.testclient import TestClient

    client = TestClient(create_app(apps="core"))
    token = client.get("/auth/token")
    assert token.status_code == 201, token.text
    return client, {"Authorization": f"Bearer {token.json()['access_token']}"}


def test_a_run_marked_failed_through_the_api_cancels_its_jobs(
    vertex_conn: Emulator,  # noqa: F811 (the fixture)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    dag_id = "mark_run_through_the_api"
    client, headers = api_client(monkeypatch)
    answers: list[int] = []

    def user(job: dict[str, Any]) -> None:
        run_id = orm_dag_run(dag_id).run_id
        answer = client.patch(
            f"/api/v2/dags/{dag_id}/dagRuns/{run_id}", json={"state": "failed"}, headers=headers
        )
        answers.append(answer.status_code)

    # hand_on_a_waiting_task returns once the job is CANCELLED and its replica processes are gone.
    _, job = hand_on_a_waiting_task(vertex_conn, tmp_path, dag_id, user)
    assert answers == [200]
    assert f"cancelled job {job['name']}" in caplog.text
