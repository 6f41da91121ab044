"""What the JobService hook and the logs hook share: the connection, project, location and retries.

``VertexHookBase`` reads the ``vertex_dist`` (or ``google_cloud_platform``) connection on first
use, applies the hook's own impersonation chain, and resolves the project (hook argument, connection,
then the credentials' own) and the location. No network in ``__init__``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
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
)
from airflow_vertex_dist.hooks.retry_warnings import RetryWarnings
from airflow_vertex_dist.jobs.dicts import parse_job_name
from airflow_vertex_dist.jobs.kinds import JobKind

if TYPE_CHECKING:
    from airflow.sdk import Connection

    from airflow_vertex_dist.hooks.service_clock import ServiceTime

__all__ = ["VertexHookBase", "connection_form_widgets"]

_CONSOLE = (
    "https://console.cloud.google.com/vertex-ai/locations/{location}/training/{job_id}/cpu?project={project}"
)


def connection_form_widgets() -> dict[str, Any]:
    """wtforms widgets of the ``vertex_dist`` connection form (Airflow < 3.2)."""
    # Imported by name: these UI packages exist only where the (pre-3.2) web server runs.
    fieldwidgets = importlib.import_module("flask_appbuilder.fieldwidgets")
    lazy_gettext = importlib.import_module("flask_babel").lazy_gettext
    wtforms = importlib.import_module("wtforms")

    widgets: dict[str, Any] = {}
    for name, spec in connection_fields().items():
        label = lazy_gettext(spec["label"])
        if "boolean" in spec["schema"]["type"]:
            widgets[name] = wtforms.BooleanField(label, description=spec["description"])
        elif spec["schema"].get("format") == "password":
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


class VertexHookBase(BaseHook):
    """Connection handling shared by the sync and async hooks. No network in ``__init__``.

    :param connection: the connection already read and parsed by another hook of the same settings
        (connection id and impersonation chain), used as it is instead of fetching it again.
    """

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
        connection: VertexConnection | None = None,
    ) -> None:
        super().__init__()
        self.vertex_dist_conn_id = vertex_dist_conn_id
        self.impersonation_chain = impersonation_chain
        self._project_id = project_id
        self._location = location
        self.retry_policy = retry_policy or RetryPolicy()
        self._conn: VertexConnection | None = connection
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

    def service_time(self) -> ServiceTime:
        """The service's clock (``hooks.service_clock``): this host's, or the pace of the scenario an
        emulator connection with a web endpoint plays."""
        from airflow_vertex_dist.hooks.service_clock import read_service_time

        return read_service_time(self.connection)

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

    def _retry_warnings(
        self, address: str | None = None, transport: str | None = None, *, location: str | None = None
    ) -> RetryWarnings:
        """The ``on_error`` hook of one call's retry (``retry_warnings``): warnings naming this
        connection, the attempt and the deadline; an emulator that refuses connections at ``address``
        over ``transport`` fails fast. By default the JobService's address: ``api_endpoint``, else
        ``location``'s (default: the hook's) regional endpoint."""
        conn = self.connection
        transport = transport or conn.transport
        if address is None and conn.api_endpoint:
            address = conn.rest_url if transport == "rest" else conn.grpc_target
        elif address is None:
            address = f"{location or self.location}-aiplatform.googleapis.com"
        return RetryWarnings(
            self.log,
            self.vertex_dist_conn_id,
            address,
            deadline_s=self.retry_policy.deadline_s,
            emulator=conn.is_emulator,
            transport=transport,
        )

    def _list_request(
        self, kind: JobKind, filter: str, page_size: int, read_mask: list[str] | None
    ) -> dict[str, Any]:
        from airflow_vertex_dist.hooks._clients import field_mask

        request: dict[str, Any] = {"parent": self.parent, "filter": filter, "page_size": page_size}
        mask = field_mask(read_mask)
        if mask is not None:
            request["read_mask"] = mask
        return request
