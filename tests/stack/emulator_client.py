"""The emulator of a stack, read and steered over its REST API: its jobs (every page, asking again past
an injected fault), its counters, and its faults and GPU capacity changed at runtime. ``AirflowStack``
(``stack.py``) takes it in as a mixin."""

from __future__ import annotations

from typing import Any

import httpx

from tests.polling import poll_until

__all__ = ["EmulatorClient"]


class EmulatorClient:
    """The emulator's REST API, on the stack's ``rest_endpoint``. The stack sets the attributes below."""

    rest_endpoint: str
    _http: httpx.Client

    def emulator_jobs(
        self, filter_: str = "", kind: str = "customJobs", location: str = "us-central1"
    ) -> list[dict[str, Any]]:
        """Every job of the stack's project in ``location`` (all pages), read over the emulator's REST API."""
        jobs: list[dict[str, Any]] = []
        token = ""
        url = f"{self.rest_endpoint}/v1/projects/stack-project/locations/{location}/{kind}"
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

    def set_capacity(self, changes: dict[str, Any]) -> None:
        """Change the emulator's GPU capacity settings at runtime (``PUT /emulator/capacity``)."""
        resp = self._http.put(f"{self.rest_endpoint}/emulator/capacity", json=changes)
        resp.raise_for_status()
