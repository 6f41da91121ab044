"""Hooks for the Vertex AI JobService (CustomJob and HyperparameterTuningJob): sync and asyncio.

Every method returns v1 JSON dicts (camelCase keys, enum names), never protos. Transient errors
(UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, INTERNAL, a proxy's 502, and over REST a refused
or dropped connection or a timeout) are retried with exponential backoff under a deadline
(``RetryPolicy``); every other error is raised as the
``google.api_core.exceptions`` error carrying the API's message.

Create is special: the API has no request id, so a Create re-sent after a transient error may make a
second billed job. Every Create therefore carries a one-off ``create-token`` label; after a transient
error the hook first looks the token up with List and only re-sends when no job carries it.

``google.*`` is imported lazily (inside methods, via ``airflow_vertex_dist.hooks._clients``), so
importing this module loads no ``google.cloud`` module; the asyncio hook makes that first import in a
worker thread (``airflow_vertex_dist.hooks.off_loop``), never on the event loop.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist.hooks.connection import VertexConnection, ui_field_behaviour
from airflow_vertex_dist.hooks.find_or_create import (
    NO_CANCEL_STATES,
    check_kind,
    find_or_create,
    newest_first,
)
from airflow_vertex_dist.hooks.hook_base import VertexHookBase, connection_form_widgets
from airflow_vertex_dist.hooks.labels import MAX_LABELS, label_filter, validate_labels
from airflow_vertex_dist.hooks.off_loop import load_clients
from airflow_vertex_dist.jobs.dicts import IfExists, job_state, parse_job_name
from airflow_vertex_dist.jobs.kinds import CUSTOM_JOBS, TERMINAL_STATES, JobKind
from airflow_vertex_dist.jobs.types import Job, JobList, Trial

if TYPE_CHECKING:
    from google.cloud.aiplatform_v1.services.job_service import JobServiceAsyncClient, JobServiceClient

    from airflow_vertex_dist.hooks._rpc import AsyncJobServiceCalls, JobServiceCalls

__all__ = [
    "CREATE_TOKEN_LABEL",
    "VertexJobsAsyncHook",
    "VertexJobsHook",
]

#: Label carrying a random token per Create call, so a Create whose response was lost can be found.
CREATE_TOKEN_LABEL = "create-token"


class VertexJobsHook(VertexHookBase):
    """Synchronous JobService hook (the operators' side).

    :param vertex_dist_conn_id: a ``vertex_dist`` or ``google_cloud_platform`` connection.
    :param project_id: overrides the connection's project.
    :param location: overrides the connection's location.
    :param retry_policy: backoff and deadline for transient errors.
    :param impersonation_chain: replaces the connection's impersonation chain.
    """

    #: Whether Create retries a RESOURCE_EXHAUSTED that is a capacity quota (``is_capacity_quota_error``:
    #: not a per-minute request rate). A capacity ladder's hooks set it to ``False``: over quota, the
    #: ladder moves to its next rung at once instead of retrying in place until the deadline.
    retry_quota_at_create: bool = True

    # Defined on this class itself: Airflow (< 3.2) only reads these from the connection type's own hook
    # class, not from its bases. Airflow >= 3.2 reads the same form from the provider info instead
    # (connection_type_info()).
    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """wtforms widgets for the ``vertex_dist`` connection form (Airflow < 3.2)."""
        return connection_form_widgets()

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return ui_field_behaviour()

    def get_conn(self, location: str | None = None) -> JobServiceClient:
        """The ``JobServiceClient`` for ``location`` (default: the hook's), created once and reused.

        Vertex AI serves each region on its own endpoint, so a job is reached through its location's
        client (the emulator serves every location on one endpoint).
        """
        where = location or self.location
        client = self._clients.get(where)
        if client is None:
            from airflow_vertex_dist.hooks._clients import build_sync_client

            client = self._clients[where] = build_sync_client(self.connection, where)
        return client

    def close(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            client.transport.close()

    def __enter__(self) -> VertexJobsHook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rpc(self, location: str | None = None) -> JobServiceCalls:
        """The typed RPCs on ``location``'s client, with the hook's retry policy."""
        from airflow_vertex_dist.hooks._clients import sync_retry
        from airflow_vertex_dist.hooks._rpc import JobServiceCalls

        return JobServiceCalls(
            self.get_conn(location),
            retry=sync_retry(self.retry_policy, self._retry_warnings(location=location)),
            timeout=self.retry_policy.rpc_timeout_s,
        )

    # -- CRUD --------------------------------------------------------------------------------------
    def create_custom_job(self, body: dict[str, Any]) -> Job:
        return self._create(CUSTOM_JOBS, body)

    def create_tuning_job(self, body: dict[str, Any]) -> Job:
        return self._create("hyperparameterTuningJobs", body)

    def create_job(self, kind: str, body: dict[str, Any]) -> Job:
        return self._create(check_kind(kind), body)

    def _create(self, kind: JobKind, body: dict[str, Any]) -> Job:
        from airflow_vertex_dist.hooks._clients import is_transient, job_from_dict
        from airflow_vertex_dist.jobs.failures import is_capacity_quota_error

        # A token from an earlier job's body (a copied job dict) must not make us "find" that job.
        labels = {k: v for k, v in (body.get("labels") or {}).items() if k != CREATE_TOKEN_LABEL}
        validate_labels(labels, field="body.labels")
        token_labels: dict[str, str] | None = None
        if len(labels) < MAX_LABELS:
            token_labels = {CREATE_TOKEN_LABEL: "t" + uuid.uuid4().hex}
        body = {**body, "labels": {**labels, **(token_labels or {})}}
        message = job_from_dict(kind, body)
        rpc = self._rpc()
        policy = self.retry_policy
        on_error = self._retry_warnings()  # names the attempt and deadline; an absent emulator fails
        deadline = time.monotonic() + policy.deadline_s
        delay = policy.initial_s
        while True:
            try:
                # No retry on Create itself: a re-send is only safe after the token lookup below.
                return rpc.create(self.parent, message)
            except Exception as exc:
                if not is_transient(exc) or token_labels is None or time.monotonic() + delay > deadline:
                    raise
                if not self.retry_quota_at_create and is_capacity_quota_error(exc):
                    raise
                on_error(exc)
                self.log.info("Looking the Create of a %s up by its token before sending it again", kind)
            time.sleep(delay)
            delay = min(delay * policy.multiplier, policy.maximum_s)
            found = self.find_job(kind, token_labels)
            if found is not None:
                self.log.info("The Create went through before the error: %s", found.get("name"))
                return found

    def get_job(self, name: str) -> Job:
        job_name = parse_job_name(name, field="name")
        return self._rpc(job_name.location).get(job_name)

    def list_jobs(
        self,
        kind: str,
        *,
        filter: str = "",
        page_size: int = 100,
        read_mask: list[str] | None = None,
    ) -> JobList:
        """Every job of ``kind`` in the hook's project/location matching ``filter`` (all pages; their
        number in ``pages``)."""
        job_kind = check_kind(kind)
        return self._rpc().list(job_kind, self._list_request(job_kind, filter, page_size, read_mask))

    def cancel_job(self, name: str) -> None:
        """Ask the service to cancel (best effort; the job goes CANCELLING then CANCELLED)."""
        job_name = parse_job_name(name, field="name")
        self._rpc(job_name.location).cancel(job_name)

    def cancel_unless_ended(self, name: str) -> tuple[Job, bool]:
        """Get the job and send Cancel unless it already ended or is being cancelled: (the job as
        read, whether Cancel was sent). A job that does not exist raises ``NotFound``."""
        job = self.get_job(name)
        if job_state(job) in NO_CANCEL_STATES:
            return job, False
        self.cancel_job(name)
        return job, True

    def delete_job(self, name: str) -> None:
        """Send Delete (a long-running operation; its completion is not awaited)."""
        job_name = parse_job_name(name, field="name")
        self._rpc(job_name.location).delete(job_name)

    def list_trials(self, name: str) -> list[Trial]:
        """The trials of a tuning job (the JobService returns them inside the job)."""
        job_name = parse_job_name(name, field="name")
        if job_name.kind != "hyperparameterTuningJobs":
            raise ValueError(f"name: {name!r} is not a hyperparameterTuningJobs name (only they have trials)")
        trials = self.get_job(name).get("trials", [])
        return list(trials)

    def wait_until_ended(self, name: str, *, timeout_s: float, poll_s: float = 0.5) -> Job:
        """Poll the job until it is in a terminal state or ``timeout_s`` passed; the last job seen."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.get_job(name)
            if job_state(job) in TERMINAL_STATES or time.monotonic() >= deadline:
                return job
            time.sleep(poll_s)

    # -- find by labels ------------------------------------------------------------------------------
    def find_jobs(self, kind: str, labels: dict[str, str]) -> list[Job]:
        """Every job of ``kind`` carrying all of ``labels``, newest first."""
        return newest_first(self.list_jobs(kind, filter=label_filter(labels)))

    def find_job(self, kind: str, labels: dict[str, str]) -> Job | None:
        """The newest job of ``kind`` carrying all of ``labels``, or ``None``."""
        jobs = self.find_jobs(kind, labels)
        return jobs[0] if jobs else None

    def find_or_create(
        self,
        kind: str,
        body: dict[str, Any],
        *,
        labels: dict[str, str],
        if_exists: IfExists = "reattach",
        retry_budget: str | None = None,
        cancel_earlier: bool = True,
        first_try: bool = False,
        converge_in_wait: bool = False,
    ) -> tuple[Job, bool]:
        """Return ``(job, created)``: this task's live or succeeded job, or a new one; the rules are
        ``find_or_create``'s."""
        return find_or_create(
            self,
            kind,
            body,
            labels=labels,
            if_exists=if_exists,
            retry_budget=retry_budget,
            cancel_earlier=cancel_earlier,
            first_try=first_try,
            converge_in_wait=converge_in_wait,
        )


class VertexJobsAsyncHook(VertexHookBase):
    """Asyncio JobService hook (the triggers' side).

    One ``JobServiceAsyncClient`` is created lazily per event loop and reused for every call of a poll
    loop; call ``close`` (or use ``async with``) when done. With the REST transport (which has no
    asyncio client without extra dependencies) calls run the sync REST client in a worker thread.
    """

    _client_loop: asyncio.AbstractEventLoop | None = None  # the loop ``_clients`` were made in
    _sync: VertexJobsHook | None = None  # the REST transport's sync hook, made on first use

    async def aconnection(self) -> VertexConnection:
        """The parsed connection, fetched without blocking the event loop.

        Every call of this hook passes here first, so this is also where the Google clients are first
        imported: in a worker thread (``load_clients``), never
        on the event loop, whose other triggers would stall for the import's second or more."""
        await load_clients()
        if self._conn is None:
            self._set_connection(await self.aget_connection(self.vertex_dist_conn_id))
        assert self._conn is not None
        return self._conn

    async def get_async_conn(self, location: str | None = None) -> JobServiceAsyncClient:
        """The ``JobServiceAsyncClient`` for ``location`` (default: the hook's) in the running event loop
        (gRPC transport); created once per loop and location, then reused."""
        conn = await self.aconnection()
        loop = asyncio.get_running_loop()
        if self._client_loop is not loop:
            self._clients = {}  # made for another (now gone) loop; their channels cannot be reused here
            self._client_loop = loop
        where = location or self.location
        client = self._clients.get(where)
        if client is None:
            from airflow_vertex_dist.hooks._clients import build_async_client

            client = self._clients[where] = build_async_client(conn, where)
        return client

    def _sync_hook(self) -> VertexJobsHook:
        if self._sync is None:
            self._sync = VertexJobsHook(
                self.vertex_dist_conn_id,
                project_id=self._project_id,
                location=self._location,
                retry_policy=self.retry_policy,
                impersonation_chain=self.impersonation_chain,
                connection=self._conn,
            )
        return self._sync

    async def close(self) -> None:
        clients, self._clients, self._client_loop = self._clients, {}, None
        for client in clients.values():
            await client.transport.close()
        if self._sync is not None:
            sync, self._sync = self._sync, None
            await asyncio.to_thread(sync.close)

    async def __aenter__(self) -> VertexJobsAsyncHook:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _uses_rest(self) -> bool:
        return (await self.aconnection()).transport == "rest"

    async def _rpc(self, location: str | None = None) -> AsyncJobServiceCalls:
        """The typed RPCs on ``location``'s asyncio client, with the hook's retry policy."""
        client = await self.get_async_conn(location)  # imports the clients off the loop first
        from airflow_vertex_dist.hooks._clients import async_retry
        from airflow_vertex_dist.hooks._rpc import AsyncJobServiceCalls

        return AsyncJobServiceCalls(
            client,
            retry=async_retry(self.retry_policy, self._retry_warnings(location=location)),
            timeout=self.retry_policy.rpc_timeout_s,
        )

    async def get_job(self, name: str) -> Job:
        job_name = parse_job_name(name, field="name")
        if await self._uses_rest():
            return await asyncio.to_thread(self._sync_hook().get_job, name)
        return await (await self._rpc(job_name.location)).get(job_name)

    async def get_job_or_none(self, name: str) -> Job | None:
        """The job, or ``None`` when it does not exist (deleted)."""
        await load_clients()
        from google.api_core.exceptions import NotFound

        try:
            return await self.get_job(name)
        except NotFound:
            return None

    async def list_jobs(
        self,
        kind: str,
        *,
        filter: str = "",
        page_size: int = 100,
        read_mask: list[str] | None = None,
    ) -> JobList:
        job_kind = check_kind(kind)
        if await self._uses_rest():
            sync = self._sync_hook()
            return await asyncio.to_thread(
                lambda: sync.list_jobs(job_kind, filter=filter, page_size=page_size, read_mask=read_mask)
            )
        request = self._list_request(job_kind, filter, page_size, read_mask)
        return await (await self._rpc()).list(job_kind, request)

    async def cancel_job(self, name: str) -> None:
        job_name = parse_job_name(name, field="name")
        if await self._uses_rest():
            await asyncio.to_thread(self._sync_hook().cancel_job, name)
            return
        await (await self._rpc(job_name.location)).cancel(job_name)

    async def cancel_unless_ended(self, name: str) -> tuple[Job, bool]:
        """``VertexJobsHook.cancel_unless_ended``, awaited."""
        job = await self.get_job(name)
        if job_state(job) in NO_CANCEL_STATES:
            return job, False
        await self.cancel_job(name)
        return job, True
