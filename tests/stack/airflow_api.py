"""The stack's Airflow REST API (``/api/v2``), as the reliability tests use it: a bearer token from the
simple auth manager (``GET /auth/token``), DAG runs triggered and awaited, backfills started, task
instances and task logs read. ``AirflowStack`` (``stack.py``) takes it in as a mixin."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from tests.polling import poll_until

from .procs import StackError

__all__ = ["TERMINAL_RUN_STATES", "AirflowApi"]

TERMINAL_RUN_STATES = {"success", "failed"}


class AirflowApi:
    """The REST API of the stack's api-server. The stack sets the attributes below."""

    api_port: int
    _http: httpx.Client
    _token: str | None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

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

    def backfill(
        self, dag_id: str, from_date: str, to_date: str, *, code: str, max_active_runs: int | None = None
    ) -> Any:
        """Start a backfill of ``dag_id`` from ``from_date`` to ``to_date`` (days, ``YYYY-MM-DD``: their
        midnight UTC) through the REST API (``POST /api/v2/backfills``), every run's conf
        ``{"code": code}``."""
        body: dict[str, Any] = {
            "dag_id": dag_id,
            "from_date": f"{from_date}T00:00:00Z",
            "to_date": f"{to_date}T00:00:00Z",
            "dag_run_conf": {"code": code},
        }
        if max_active_runs is not None:
            body["max_active_runs"] = max_active_runs
        return self.api("POST", "/api/v2/backfills", json_body=body)

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
