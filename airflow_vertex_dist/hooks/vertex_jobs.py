"""Hooks for the Vertex AI JobService (CustomJob and HyperparameterTuningJob): sync and asyncio.

Every method returns v1 JSON dicts (camelCase keys, enum names), never protos. Transient errors
(UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, INTERNAL, a proxy's 502, and over REST a refused
or dropped connection or a timeout) are retried with exponential backoff under a deadline
(:class:`~airflow_vertex_dist.hooks.connection.RetryPolicy`); every other error is raised as the
``google.api_core.exceptions`` error carrying the API's message.

Create is special: the API has no request id, so a Create re-sent after a transient error may make a
second billed job. Every Create therefore carries a one-off ``create-token`` label; after a transient
error the hook first looks the token up with List and only re-sends when no job carries it.

``google.*`` is imported lazily (inside methods, via :mod:`airflow_vertex_dist.hooks._clients`), so
importing this module loads no ``google.cloud`` module; the asyncio hook makes that first import in a
worker thread (:mod:`airflow_vertex_dist.hooks.off_loop`), never on the event loop.
"""

from __future__ import annotations

import asyncio
import importlib
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist._compat import BaseHook
from airflow_vertex_dist.hooks.connection import (
    CONN_TYPE,
    DEFAULT_CONN_ID,
    HOOK_NAME,
    RetryPolicy,
    VertexConnection,
    connection_fields,
    parse_impersonation_chain,
    ui_field_behaviour,
)
from airflow_vertex_dist.hooks.job_dicts import (
    CUSTOM_JOBS,
    IF_EXISTS,
    JOB_KINDS,
    REATTACHABLE_STATES,
    TERMINAL_STATES,
    IfExists,
    JobKind,
    check_if_exists,
    job_state,
    parse_job_name,
    rfc3339_key,
    short_state,
)
from airflow_vertex_dist.hooks.labels import (
    BUDGET_LABEL,
    MAX_LABELS,
    SPEC_LABEL,
    label_filter,
    merge_labels,
    spec_fingerprint,
    validate_labels,
)
from airflow_vertex_dist.hooks.off_loop import load_clients

if TYPE_CHECKING:
    from airflow.sdk import Connection

__all__ = [
    "CREATE_TOKEN_LABEL",
    "IF_EXISTS",
    "IfExists",
    "JobAlreadyExistsError",
    "LIVE_STATES",
    "VertexJobsAsyncHook",
    "VertexJobsHook",
    "check_if_exists",
]

#: Label carrying a random token per Create call, so a Create whose response was lost can be found.
CREATE_TOKEN_LABEL = "create-token"

_CONSOLE = (
    "https://console.cloud.google.com/vertex-ai/locations/{location}/training/{job_id}/cpu?project={project}"
)

# RPC method names of the generated clients, per job kind.
_RPC: dict[str, dict[str, str]] = {
    "customJobs": {
        "create": "create_custom_job",
        "body": "custom_job",
        "get": "get_custom_job",
        "list": "list_custom_jobs",
        "cancel": "cancel_custom_job",
        "delete": "delete_custom_job",
    },
    "hyperparameterTuningJobs": {
        "create": "create_hyperparameter_tuning_job",
        "body": "hyperparameter_tuning_job",
        "get": "get_hyperparameter_tuning_job",
        "list": "list_hyperparameter_tuning_jobs",
        "cancel": "cancel_hyperparameter_tuning_job",
        "delete": "delete_hyperparameter_tuning_job",
    },
}


#: The states of a job under way (not ended, not being cancelled): what concurrent tries converge on.
LIVE_STATES = REATTACHABLE_STATES - {"JOB_STATE_SUCCEEDED"}

#: ``cancel_unless_ended`` sends nothing to a job in these: it ended, or a cancel is already under way.
_NO_CANCEL_STATES = TERMINAL_STATES | {"JOB_STATE_CANCELLING"}


class JobAlreadyExistsError(RuntimeError):
    """``find_or_create(if_exists="fail")`` found a live or succeeded job for these labels."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        super().__init__(
            f"if_exists='fail': job {job.get('name')} for these labels already exists "
            f"(state {job_state(job)})"
        )


def _check_kind(kind: str) -> JobKind:
    if kind not in JOB_KINDS:
        raise ValueError(f"kind: must be one of {', '.join(JOB_KINDS)} (got {kind!r})")
    return CUSTOM_JOBS if kind == CUSTOM_JOBS else "hyperparameterTuningJobs"


def _newest_first(jobs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(jobs, key=lambda job: rfc3339_key(str(job.get("createTime", ""))), reverse=True)


def _age(job: dict[str, Any]) -> tuple[Any, str]:
    """Sort key, oldest first: ``createTime``, then the name (so every caller picks the same job)."""
    return rfc3339_key(str(job.get("createTime", ""))), str(job.get("name", ""))


def _adoptable(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """The job to re-attach to: the oldest unfinished one (the one concurrent tries keep), else the
    newest succeeded one."""
    live = [job for job in jobs if job_state(job) in LIVE_STATES]
    return sorted(live, key=_age)[0] if live else _newest_first(jobs)[0]


def _connection_form_widgets() -> dict[str, Any]:
    # Imported by name: these UI packages exist only where the (pre-3.2) web server runs.
    fieldwidgets = importlib.import_module("flask_appbuilder.fieldwidgets")
    lazy_gettext = importlib.import_module("flask_babel").lazy_gettext
    wtforms = importlib.import_module("wtforms")

    widgets: dict[str, Any] = {}
    for name, spec in connection_fields().items():
        label = lazy_gettext(spec["label"])
        if spec["schema"].get("format") == "password":
            widgets[name] = wtforms.PasswordField(
                label, widget=fieldwidgets.BS3PasswordFieldWidget(), description=spec["description"]
            )
        else:
            widgets[name] = wtforms.StringField(
                label,
                widget=fieldwidgets.BS3TextFieldWidget(),
                description=spec["description"],
                default=spec["schema"].get("default"),
            )
    return widgets


class _VertexHookBase(BaseHook):
    """Connection handling shared by the sync and async hooks. No network in ``__init__``."""

    conn_name_attr = "vertex_dist_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = CONN_TYPE
    hook_name = HOOK_NAME

    def __init__(
        self,
        vertex_dist_conn_id: str = DEFAULT_CONN_ID,
        *,
        project_id: str | None = None,
        location: str | None = None,
        retry_policy: RetryPolicy | None = None,
        impersonation_chain: str | Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        self.vertex_dist_conn_id = vertex_dist_conn_id
        self.impersonation_chain = impersonation_chain
        self._project_id = project_id
        self._location = location
        self.retry_policy = retry_policy or RetryPolicy()
        self._conn: VertexConnection | None = None
        self._credentials_project: str | None = None
        self._clients: dict[str, Any] = {}  # JobService clients by location, made on first use

    # -- connection ------------------------------------------------------------------------------
    def _set_connection(self, conn: Connection) -> VertexConnection:
        parsed = VertexConnection.from_extra(
            conn.extra_dejson, conn_id=self.vertex_dist_conn_id, conn_type=conn.conn_type
        )
        self._conn = parsed.with_impersonation_chain(self.impersonation_chain)
        return self._conn

    @property
    def connection(self) -> VertexConnection:
        """The parsed connection (fetched on first use)."""
        if self._conn is None:
            self._set_connection(self.get_connection(self.vertex_dist_conn_id))
        assert self._conn is not None
        return self._conn

    @property
    def impersonation_chain_override(self) -> tuple[str, ...]:
        """The hook's own ``impersonation_chain`` (empty: the connection's applies)."""
        return parse_impersonation_chain(self.impersonation_chain)

    @property
    def is_emulator(self) -> bool:
        return self.connection.is_emulator

    @property
    def project_id(self) -> str:
        project = self._project_id or self.connection.project
        if project:
            return project
        if not self.connection.is_emulator:
            if self._credentials_project is None:
                from airflow_vertex_dist.hooks._clients import build_credentials

                self._credentials_project = build_credentials(self.connection)[1] or ""
            if self._credentials_project:
                return self._credentials_project
        raise ValueError(
            f"{self.vertex_dist_conn_id}.extra.project: no project (set it on the connection or pass "
            "project_id to the hook)"
        )

    @property
    def location(self) -> str:
        location = self._location or self.connection.location
        if not location:
            raise ValueError(
                f"{self.vertex_dist_conn_id}.extra.location: no location (set it on the connection or "
                "pass location to the hook)"
            )
        return location

    @property
    def parent(self) -> str:
        return f"projects/{self.project_id}/locations/{self.location}"

    def console_url(self, job_name: str) -> str:
        """The job's page: the Vertex AI console, or ``<web endpoint>/ui/<job name>`` on the emulator."""
        name = parse_job_name(job_name)
        conn = self.connection
        if conn.is_emulator:
            base = conn.web_url or conn.rest_url
            return f"{base}/ui/{name}"
        return _CONSOLE.format(location=name.location, job_id=name.job_id, project=name.project)

    def _log_retry(self, exc: Exception) -> None:
        self.log.warning("Vertex AI call failed with a transient error, retrying: %s", exc)

    def _list_request(
        self, kind: JobKind, filter: str, page_size: int, read_mask: list[str] | None
    ) -> dict[str, Any]:
        from airflow_vertex_dist.hooks._clients import field_mask

        request: dict[str, Any] = {"parent": self.parent, "filter": filter, "page_size": page_size}
        mask = field_mask(read_mask)
        if mask is not None:
            request["read_mask"] = mask
        return request


class VertexJobsHook(_VertexHookBase):
    """Synchronous JobService hook (the operators' side).

    :param vertex_dist_conn_id: a ``vertex_dist`` or ``google_cloud_platform`` connection.
    :param project_id: overrides the connection's project.
    :param location: overrides the connection's location.
    :param retry_policy: backoff and deadline for transient errors.
    :param impersonation_chain: replaces the connection's impersonation chain.
    """

    # Defined on this class itself: Airflow (< 3.2) only reads these from the connection type's own hook
    # class, not from its bases. Airflow >= 3.2 reads the same form from the provider info instead
    # (connection_type_info()).
    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """wtforms widgets for the ``vertex_dist`` connection form (Airflow < 3.2)."""
        return _connection_form_widgets()

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return ui_field_behaviour()

    def get_conn(self, location: str | None = None) -> Any:
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

    def _call(self, kind: JobKind, op: str, location: str | None = None, **kwargs: Any) -> Any:
        from airflow_vertex_dist.hooks._clients import sync_retry

        method = getattr(self.get_conn(location), _RPC[kind][op])
        return method(
            **kwargs,
            retry=sync_retry(self.retry_policy, self._log_retry),
            timeout=self.retry_policy.rpc_timeout_s,
        )

    # -- CRUD --------------------------------------------------------------------------------------
    def create_custom_job(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._create(CUSTOM_JOBS, body)

    def create_tuning_job(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._create("hyperparameterTuningJobs", body)

    def create_job(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._create(_check_kind(kind), body)

    def _create(self, kind: JobKind, body: dict[str, Any]) -> dict[str, Any]:
        from airflow_vertex_dist.hooks._clients import is_transient, job_from_dict, job_to_dict

        # A token from an earlier job's body (a copied job dict) must not make us "find" that job.
        labels = {k: v for k, v in (body.get("labels") or {}).items() if k != CREATE_TOKEN_LABEL}
        validate_labels(labels, field="body.labels")
        token_labels: dict[str, str] | None = None
        if len(labels) < MAX_LABELS:
            token_labels = {CREATE_TOKEN_LABEL: "t" + uuid.uuid4().hex}
        body = {**body, "labels": {**labels, **(token_labels or {})}}
        message = job_from_dict(kind, body)
        rpc = _RPC[kind]
        method: Callable[..., Any] = getattr(self.get_conn(), rpc["create"])
        policy = self.retry_policy
        deadline = time.monotonic() + policy.deadline_s
        delay = policy.initial_s
        while True:
            try:
                # No retry on Create itself: a re-send is only safe after the token lookup below.
                created = method(
                    parent=self.parent, **{rpc["body"]: message}, retry=None, timeout=policy.rpc_timeout_s
                )
                return job_to_dict(created)
            except Exception as exc:
                if not is_transient(exc) or token_labels is None or time.monotonic() + delay > deadline:
                    raise
                self.log.warning("Create %s failed with a transient error (%s); looking it up", kind, exc)
            time.sleep(delay)
            delay = min(delay * policy.multiplier, policy.maximum_s)
            found = self.find_job(kind, token_labels)
            if found is not None:
                self.log.info("The Create went through before the error: %s", found.get("name"))
                return found

    def get_job(self, name: str) -> dict[str, Any]:
        from airflow_vertex_dist.hooks._clients import job_to_dict

        job_name = parse_job_name(name, field="name")
        return job_to_dict(self._call(job_name.kind, "get", job_name.location, name=name))

    def list_jobs(
        self,
        kind: str,
        *,
        filter: str = "",
        page_size: int = 100,
        read_mask: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Every job of ``kind`` in the hook's project/location matching ``filter`` (all pages)."""
        from airflow_vertex_dist.hooks._clients import job_to_dict

        job_kind = _check_kind(kind)
        request = self._list_request(job_kind, filter, page_size, read_mask)
        pager = self._call(job_kind, "list", request=request)
        return [job_to_dict(job) for job in pager]

    def cancel_job(self, name: str) -> None:
        """Ask the service to cancel (best effort; the job goes CANCELLING then CANCELLED)."""
        job_name = parse_job_name(name, field="name")
        self._call(job_name.kind, "cancel", job_name.location, name=name)

    def cancel_unless_ended(self, name: str) -> tuple[dict[str, Any], bool]:
        """Get the job and send Cancel unless it already ended or is being cancelled: (the job as
        read, whether Cancel was sent). A job that does not exist raises ``NotFound``."""
        job = self.get_job(name)
        if job_state(job) in _NO_CANCEL_STATES:
            return job, False
        self.cancel_job(name)
        return job, True

    def delete_job(self, name: str) -> None:
        """Send Delete (a long-running operation; its completion is not awaited)."""
        job_name = parse_job_name(name, field="name")
        self._call(job_name.kind, "delete", job_name.location, name=name)

    def list_trials(self, name: str) -> list[dict[str, Any]]:
        """The trials of a tuning job (the JobService returns them inside the job)."""
        job_name = parse_job_name(name, field="name")
        if job_name.kind != "hyperparameterTuningJobs":
            raise ValueError(f"name: {name!r} is not a hyperparameterTuningJobs name (only they have trials)")
        trials = self.get_job(name).get("trials", [])
        return list(trials)

    def wait_until_ended(self, name: str, *, timeout_s: float, poll_s: float = 0.5) -> dict[str, Any]:
        """Poll the job until it is in a terminal state or ``timeout_s`` passed; the last job seen."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.get_job(name)
            if job_state(job) in TERMINAL_STATES or time.monotonic() >= deadline:
                return job
            time.sleep(poll_s)

    # -- find by labels ------------------------------------------------------------------------------
    def find_jobs(self, kind: str, labels: dict[str, str]) -> list[dict[str, Any]]:
        """Every job of ``kind`` carrying all of ``labels``, newest first."""
        return _newest_first(self.list_jobs(kind, filter=label_filter(labels)))

    def find_job(self, kind: str, labels: dict[str, str]) -> dict[str, Any] | None:
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
    ) -> tuple[dict[str, Any], bool]:
        """Return ``(job, created)``: this task's live or succeeded job, or a new one.

        ``labels`` (normally :func:`~airflow_vertex_dist.hooks.labels.run_labels`) are merged into the
        body and identify the run; the body also gets the ``airflow-spec`` label, its fingerprint
        (:func:`~airflow_vertex_dist.hooks.labels.spec_fingerprint`). Only a job carrying the run's
        labels *and* this fingerprint is this task's: one with another fingerprint (a job of another
        deployment, a copy made in the console, or one made from another version of the spec) is
        logged and never adopted, cancelled or counted.

        ``retry_budget`` (a label value, see :func:`~airflow_vertex_dist.hooks.labels.retry_budget`)
        names the retry budget of the calling try and is written on the job (``airflow-budget``).
        A job of this task made in another budget was made by a try before the task was cleared: it
        is never adopted (a clear means "run it again") and, with ``cancel_earlier``, cancelled when
        unfinished. Without ``retry_budget`` every job of this task counts as this budget's.

        With a job of this budget in a re-attachable state (queued, pending, running, paused, updating
        or succeeded): ``reattach`` returns it (the oldest unfinished one, else the newest succeeded
        one), ``fail`` raises :class:`JobAlreadyExistsError`, ``recreate`` cancels the unfinished ones
        and creates a new job. Jobs that failed, were cancelled, expired or partially succeeded never
        block a new one.

        The service has no request id, so calls running at the same time (two copies of one task
        instance) may each create a job. After its Create a call therefore lists this budget's
        unfinished jobs again and, when there is more than one, keeps the oldest (by ``createTime``,
        then name: the same choice in every caller) and cancels the others; every caller returns the
        kept job (``created`` is then true only for the caller that made it).
        """
        job_kind = _check_kind(kind)
        check_if_exists(if_exists)
        fingerprint = spec_fingerprint(body)
        task_labels = {**labels, SPEC_LABEL: fingerprint}
        if retry_budget is not None:
            task_labels[BUDGET_LABEL] = retry_budget
        merged = merge_labels(body.get("labels"), task_labels, field="body.labels")
        mine, earlier = self._task_jobs(job_kind, labels, fingerprint, retry_budget)
        skip: set[str] = set()
        if earlier:
            if cancel_earlier:
                skip = self._cancel_active(earlier, "made by a try before the task was cleared")
            else:
                for job in earlier:
                    self.log.info(
                        "Leaving %s (%s), made by a try before the task was cleared, alone "
                        "(cancel_earlier=False)",
                        job["name"],
                        short_state(job_state(job)),
                    )
        if mine:
            if if_exists == "reattach":
                job = _adoptable(mine)
                self.log.info("Re-attaching to %s (%s)", job["name"], short_state(job_state(job)))
                return job, False
            if if_exists == "fail":
                raise JobAlreadyExistsError(_adoptable(mine))
            skip |= self._cancel_active(mine, "if_exists='recreate'")
        created = self._create(job_kind, {**body, "labels": merged})
        return self._converge(job_kind, task_labels, created, skip)

    def _task_jobs(
        self, kind: JobKind, labels: dict[str, str], fingerprint: str, budget: str | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The run's re-attachable jobs carrying ``fingerprint``: ``(of this budget, of earlier ones)``.
        Jobs with another fingerprint are logged, not returned."""
        mine: list[dict[str, Any]] = []
        earlier: list[dict[str, Any]] = []
        for job in self.find_jobs(kind, labels):
            if job_state(job) not in REATTACHABLE_STATES:
                continue
            job_labels = job.get("labels") or {}
            theirs = job_labels.get(SPEC_LABEL)
            if theirs != fingerprint:
                self.log.warning(
                    "Not adopting %s (%s): it carries this run's labels but its spec fingerprint "
                    "(%s=%s) is not this task's (%s): a job of another deployment, a copy, or one made "
                    "from another version of the spec",
                    job["name"],
                    short_state(job_state(job)),
                    SPEC_LABEL,
                    theirs,
                    fingerprint,
                )
            elif budget is None or job_labels.get(BUDGET_LABEL) == budget:
                mine.append(job)
            else:
                earlier.append(job)
        return mine, earlier

    def _converge(
        self, kind: JobKind, task_labels: dict[str, str], created: dict[str, Any], skip: set[str]
    ) -> tuple[dict[str, Any], bool]:
        """After a Create: keep the oldest of the task's unfinished jobs and cancel the others."""
        live = [
            job
            for job in self.find_jobs(kind, task_labels)
            if job_state(job) in LIVE_STATES and job["name"] not in skip
        ]
        if len(live) <= 1:
            return created, True
        keep, *others = sorted(live, key=_age)
        self.log.warning(
            "%d unfinished jobs of this task were created at the same time (concurrent tries); keeping "
            "the oldest, %s, and cancelling %s",
            len(live),
            keep["name"],
            ", ".join(str(job["name"]) for job in others),
        )
        for job in others:
            try:
                self.cancel_job(str(job["name"]))
            except Exception as exc:  # another caller may be cancelling it too
                self.log.warning("Cancel of %s failed: %s", job["name"], exc)
        if keep["name"] == created["name"]:
            return created, True
        self.log.info("Re-attaching to %s (%s)", keep["name"], short_state(job_state(keep)))
        return keep, False

    def _cancel_active(self, jobs: list[dict[str, Any]], reason: str) -> set[str]:
        """Cancel the unfinished ones of ``jobs``; the names of those sent a Cancel."""
        sent = set()
        for job in jobs:  # the rule of cancel_unless_ended: not an ended job, nor one being cancelled
            if job_state(job) not in _NO_CANCEL_STATES:
                self.log.warning("Cancelling %s (%s): %s", job["name"], short_state(job_state(job)), reason)
                self.cancel_job(job["name"])
                sent.add(str(job["name"]))
        return sent


class VertexJobsAsyncHook(_VertexHookBase):
    """Asyncio JobService hook (the triggers' side).

    One ``JobServiceAsyncClient`` is created lazily per event loop and reused for every call of a poll
    loop; call :meth:`close` (or use ``async with``) when done. With the REST transport (which has no
    asyncio client without extra dependencies) calls run the sync REST client in a worker thread.
    """

    _client_loop: asyncio.AbstractEventLoop | None = None  # the loop ``_clients`` were made in
    _sync: VertexJobsHook | None = None  # the REST transport's sync hook, made on first use

    async def aconnection(self) -> VertexConnection:
        """The parsed connection, fetched without blocking the event loop.

        Every call of this hook passes here first, so this is also where the Google clients are first
        imported: in a worker thread (:func:`~airflow_vertex_dist.hooks.off_loop.load_clients`), never
        on the event loop, whose other triggers would stall for the import's second or more."""
        await load_clients()
        if self._conn is None:
            self._set_connection(await self.aget_connection(self.vertex_dist_conn_id))
        assert self._conn is not None
        return self._conn

    async def get_async_conn(self, location: str | None = None) -> Any:
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
            )
            self._sync._conn = self._conn
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

    async def _call(self, kind: JobKind, op: str, location: str | None = None, **kwargs: Any) -> Any:
        from airflow_vertex_dist.hooks._clients import async_retry

        client = await self.get_async_conn(location)
        method = getattr(client, _RPC[kind][op])
        return await method(
            **kwargs,
            retry=async_retry(self.retry_policy, self._log_retry),
            timeout=self.retry_policy.rpc_timeout_s,
        )

    async def get_job(self, name: str) -> dict[str, Any]:
        from airflow_vertex_dist.hooks._clients import job_to_dict

        job_name = parse_job_name(name, field="name")
        if await self._uses_rest():
            return await asyncio.to_thread(self._sync_hook().get_job, name)
        return job_to_dict(await self._call(job_name.kind, "get", job_name.location, name=name))

    async def get_job_or_none(self, name: str) -> dict[str, Any] | None:
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
    ) -> list[dict[str, Any]]:
        from airflow_vertex_dist.hooks._clients import job_to_dict

        job_kind = _check_kind(kind)
        if await self._uses_rest():
            sync = self._sync_hook()
            return await asyncio.to_thread(
                lambda: sync.list_jobs(job_kind, filter=filter, page_size=page_size, read_mask=read_mask)
            )
        pager = await self._call(
            job_kind, "list", request=self._list_request(job_kind, filter, page_size, read_mask)
        )
        return [job_to_dict(job) async for job in pager]

    async def cancel_job(self, name: str) -> None:
        job_name = parse_job_name(name, field="name")
        if await self._uses_rest():
            await asyncio.to_thread(self._sync_hook().cancel_job, name)
            return
        await self._call(job_name.kind, "cancel", job_name.location, name=name)

    async def cancel_unless_ended(self, name: str) -> tuple[dict[str, Any], bool]:
        """:meth:`VertexJobsHook.cancel_unless_ended`, awaited."""
        job = await self.get_job(name)
        if job_state(job) in _NO_CANCEL_STATES:
            return job, False
        await self.cancel_job(name)
        return job, True
