"""``PersistentResourceTrigger``: wait in the triggerer until a persistent resource is RUNNING.

Creating a persistent resource takes minutes on Vertex AI, so the ensure operator defers its wait
here. The trigger reads the resource every ``poll_interval`` seconds (the resource hook's Get, in a
worker thread: the hook is synchronous, the event loop is never blocked) and fires exactly one event:
``{"status": "success" | "error", "message": str, "resource": <resource> | None}``: success once it
is RUNNING; an error when it is in ERROR or STOPPING, is gone, or ``timeout`` seconds passed. Its
kwargs are JSON scalars, and ``serialize`` mirrors ``__init__``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_vertex_dist.triggers.base import trigger_classpath

__all__ = ["PersistentResourceTrigger"]


class PersistentResourceTrigger(BaseTrigger):
    """Waits until persistent resource ``resource_id`` (in ``project_id``/``location`` of connection
    ``conn_id``) is RUNNING; see the module doc. ``impersonation_chain``: the task's own, comma-joined
    ("" for the connection's)."""

    def __init__(
        self,
        *,
        resource_id: str,
        conn_id: str,
        project_id: str | None,
        location: str,
        poll_interval: float = 10.0,
        timeout: float | None = None,
        impersonation_chain: str = "",
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.resource_id = resource_id
        self.conn_id = conn_id
        self.project_id = project_id
        self.location = location
        self.poll_interval = float(poll_interval)
        self.timeout = None if timeout is None else float(timeout)
        self.impersonation_chain = impersonation_chain

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            trigger_classpath(type(self)),
            {
                "resource_id": self.resource_id,
                "conn_id": self.conn_id,
                "project_id": self.project_id,
                "location": self.location,
                "poll_interval": self.poll_interval,
                "timeout": self.timeout,
                "impersonation_chain": self.impersonation_chain,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        event = await self._wait()
        yield TriggerEvent(event)  # type: ignore[no-untyped-call]

    async def _wait(self) -> dict[str, Any]:
        from airflow_vertex_dist.hooks.persistent_resources import PersistentResourcesHook
        from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook
        from airflow_vertex_dist.jobs.resources import resource_state

        chain = self.impersonation_chain or None
        async with VertexJobsAsyncHook(self.conn_id, impersonation_chain=chain) as jobs_hook:
            conn = await jobs_hook.aconnection()  # read off the loop, the clients imported off it too
        hook = PersistentResourcesHook(
            self.conn_id,
            project_id=self.project_id,
            location=self.location,
            impersonation_chain=chain,
            connection=conn,
        )
        started = time.monotonic()
        try:
            while True:
                resource = await asyncio.to_thread(hook.get_resource, self.resource_id)
                name = hook.resource_name(self.resource_id)
                if resource is None:
                    return {
                        "status": "error",
                        "message": f"persistent resource {name} is gone",
                        "resource": None,
                    }
                state = resource_state(resource)
                if state == "RUNNING":
                    return {"status": "success", "message": f"{name} is RUNNING", "resource": resource}
                if state in ("ERROR", "STOPPING"):
                    error = (resource.get("error") or {}).get("message") or ""
                    message = f"persistent resource {name} is {state}" + (f": {error}" if error else "")
                    return {"status": "error", "message": message, "resource": resource}
                if self.timeout is not None and time.monotonic() - started >= self.timeout:
                    message = f"persistent resource {name} still {state} after {self.timeout:g}s"
                    return {"status": "error", "message": message, "resource": resource}
                await asyncio.sleep(self.poll_interval)
        finally:
            await asyncio.to_thread(hook.close)
