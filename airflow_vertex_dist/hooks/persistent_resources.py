"""A hook for the Vertex AI PersistentResourceService (v1): get, list, create, delete a persistent
resource, and the jobs of its region that name it.

Every method returns v1 JSON dicts (camelCase keys, enum names, int64 as strings), never protos.
Transient errors are retried as the JobService hook retries them (the connection's ``RetryPolicy``).
Create and Delete start long-running operations: the hook sends them and returns; whoever waits reads
the resource again (``get_resource``) until it has the state it waits for. Create is safe to send again:
the resource's id is the request's, so a second Create of one id answers ALREADY_EXISTS, which
``create_resource`` reads as "it exists" and answers with the resource.

``google.*`` is imported lazily (inside methods, via ``_clients``), so importing this module
loads no ``google.cloud`` module.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist.hooks.hook_base import VertexHookBase
from airflow_vertex_dist.jobs.kinds import CUSTOM_JOBS, TUNING_JOBS
from airflow_vertex_dist.jobs.resources import job_resource_id, resource_state

if TYPE_CHECKING:
    from google.cloud.aiplatform_v1.services.persistent_resource_service import (
        PersistentResourceServiceClient,
    )

    from airflow_vertex_dist.jobs.types import Job

__all__ = ["PersistentResourcesHook", "Resource"]

#: A persistent resource as the REST API's JSON.
Resource = dict[str, Any]


class PersistentResourcesHook(VertexHookBase):
    """Synchronous PersistentResourceService hook on the hook's project and location (the parameters
    are ``VertexJobsHook``'s). No network in ``__init__``."""

    def get_conn(self) -> PersistentResourceServiceClient:
        client = self._clients.get(self.location)
        if client is None:
            from airflow_vertex_dist.hooks._clients import build_resource_client

            client = self._clients[self.location] = build_resource_client(self.connection, self.location)
        return client

    def close(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            client.transport.close()

    def _call(self) -> dict[str, Any]:
        from airflow_vertex_dist.hooks._clients import sync_retry

        retry = sync_retry(self.retry_policy, self._retry_warnings(location=self.location))
        return {"retry": retry, "timeout": self.retry_policy.rpc_timeout_s}

    def resource_name(self, resource_id: str) -> str:
        return f"{self.parent}/persistentResources/{resource_id}"

    def get_resource(self, resource_id: str) -> Resource | None:
        """The resource, or ``None`` when there is none of that id."""
        from google.api_core import exceptions

        from airflow_vertex_dist.hooks._clients import job_to_dict

        try:
            found = self.get_conn().get_persistent_resource(
                name=self.resource_name(resource_id), **self._call()
            )
        except exceptions.NotFound:
            return None
        return job_to_dict(found)

    def list_resources(self) -> list[Resource]:
        """Every persistent resource of the hook's project and location."""
        from airflow_vertex_dist.hooks._clients import job_to_dict

        pager = self.get_conn().list_persistent_resources(parent=self.parent, **self._call())
        return [job_to_dict(resource) for resource in pager]

    def create_resource(self, resource_id: str, body: dict[str, Any]) -> tuple[Resource, bool]:
        """Send Create for ``body`` (a v1 ``PersistentResource`` JSON) as ``resource_id``: ``(the
        resource as read after, whether this call created it)``. A resource of that id that exists
        already is returned as it is (its shape is the caller's to compare)."""
        from google.api_core import exceptions
        from google.cloud.aiplatform_v1 import types as v1

        message = v1.PersistentResource.from_json(json.dumps(body))
        created = True
        try:
            self.get_conn().create_persistent_resource(
                parent=self.parent,
                persistent_resource=message,
                persistent_resource_id=resource_id,
                **self._call(),
            )
        except exceptions.Conflict:  # ALREADY_EXISTS over gRPC (a subclass), 409 over REST
            created = False
        resource = self.get_resource(resource_id)
        if resource is None:  # created and deleted at once: rare, and the caller's to see
            raise LookupError(
                f"persistent resource {self.resource_name(resource_id)} is gone right after Create"
            )
        return resource, created

    def delete_resource(self, resource_id: str) -> bool:
        """Send Delete; ``False`` when there was no resource of that id."""
        from google.api_core import exceptions

        try:
            self.get_conn().delete_persistent_resource(name=self.resource_name(resource_id), **self._call())
        except exceptions.NotFound:
            return False
        return True

    def wait_for_state(
        self, resource_id: str, states: frozenset[str], *, timeout_s: float, poll_s: float = 1.0
    ) -> Resource | None:
        """Read the resource until its state is one of ``states``, it is gone (``None``) or ``timeout_s``
        passed (on the service's clock: an emulator's scenario pace); the last resource read."""
        pace = self.service_time()
        deadline = pace.now_ns() + int(timeout_s * 1e9)
        while True:
            resource = self.get_resource(resource_id)
            if resource is None or resource_state(resource) in states:
                return resource
            pace = self.service_time()
            if pace.now_ns() >= deadline:
                return resource
            left_s = pace.real_s((deadline - pace.now_ns()) / 1e9)
            time.sleep(min(pace.poll_s(poll_s), max(0.05, left_s)))

    def jobs_on(self, resource_id: str, since: str | None = None) -> list[Job]:
        """The CustomJobs and tuning jobs of the location whose spec names ``resource_id``, created at
        or after ``since`` (RFC 3339; the resource's ``createTime``: a job older than the resource ran
        on an earlier resource of that id)."""
        from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

        jobs = VertexJobsHook(
            self.vertex_dist_conn_id,
            project_id=self._project_id,
            location=self.location,
            retry_policy=self.retry_policy,
            connection=self.connection,
        )
        where = f'create_time>="{since}"' if since else ""
        found: list[Job] = []
        try:
            for kind in (CUSTOM_JOBS, TUNING_JOBS):
                found += [j for j in jobs.list_jobs(kind, filter=where) if job_resource_id(j) == resource_id]
        finally:
            jobs.close()
        return found
