"""The ``vertex_dist`` connection: its fields and parsing with clear errors.

Pure (pydantic only): no Google import. The hooks turn ``VertexConnection`` into credentials and
clients in ``airflow_vertex_dist.hooks._clients``; the form Airflow's UI shows is declared in
``airflow_vertex_dist.hooks.connection_form``; reading a connection's type and extra (the prefixed
keys, the Google provider's names, the fields refused) is ``airflow_vertex_dist.hooks.connection_extra``.

The hooks read three connection types: ``vertex_dist``, the Google provider's ``google_cloud_platform``
as its connection form saves it (every field; the Google provider package is not needed), and
``generic``, the type ``airflow connections add --conn-type google_cloud_platform`` stores when the
Google provider is not installed. Fields (connection ``extra``, JSON; the prefixed
``extra__vertex_dist__<field>`` and ``extra__google_cloud_platform__<field>`` keys are accepted too,
the plain key winning when both are set; a blank value, ``""`` or ``null``, counts as not set):

``project``, ``location``
    Defaults for the hook (a hook's ``project_id`` / ``location`` argument wins). Without a project,
    the one of the credentials (application default or key file) is used.
``key_path`` | ``keyfile_dict``
    A service account (or any google-auth credentials) JSON file path, or its JSON text. Neither means
    Application Default Credentials.
``credential_config_file``
    A credential configuration file (workload identity federation: an ``external_account`` JSON), as
    a path or as its JSON text.
``is_anonymous``
    ``true``: anonymous credentials (the other credentials fields must be empty).
``impersonation_chain``
    A service account to impersonate, or a chain (list, or comma separated), the last one being the
    target; the credentials above sign for the first. An operator's ``impersonation_chain`` replaces it.
``quota_project_id``
    The quota (billing) project of every call: JobService and Cloud Logging, both transports. It is
    put on the credentials (``with_quota_project``), which send it as the ``x-goog-user-project``
    header; ignored with anonymous credentials (as the Google provider does).
``scope``
    OAuth scopes, comma separated (default ``https://www.googleapis.com/auth/cloud-platform``).
``num_retries``
    Accepted (a ``google_cloud_platform`` connection's form saves it) and not used: the hooks retry by
    their ``RetryPolicy``.

A key kept in Secret Manager (``key_secret_name``, ``key_secret_project_id``) and the client
credentials grant flow (``idp_issuer_url``, ``client_id``, ``client_secret``,
``idp_extra_parameters``) are refused with an error naming the field, when set (blank, they are
ignored).

``transport``
    ``grpc`` (default) or ``rest``.
``api_endpoint``
    Overrides the regional endpoint ``<location>-aiplatform.googleapis.com``: a Private Service Connect
    or other private endpoint, reached over TLS with the connection's credentials. ``host[:port]`` for
    gRPC (port 443 by default), ``https://host[:port]`` (or ``host[:port]``) for REST.
``emulator``
    ``true``: ``api_endpoint`` is the local emulator (``host:port`` for gRPC, ``http://host:port`` for
    REST): anonymous credentials, a plain channel (the credentials fields are ignored), job links to
    the emulator's pages and its Logging API. An endpoint that cannot be a TLS endpoint with real
    credentials (``http://``, ``grpc://``) needs it; a loopback ``api_endpoint`` (``127.0.0.1``,
    ``localhost``) needs ``emulator`` set either way, ``true`` or ``false``, as older connections
    meant the emulator by it.
``web_endpoint``
    The emulator's web (REST) base URL, used for links to a job's page: ``<web_endpoint>/ui/<job name>``.
    Defaults to ``api_endpoint`` when the transport is REST. The emulator serves gRPC and REST on two
    ports, so a gRPC connection to it should set both. Only with ``emulator``.
``emulator_token`` | ``emulator_token_file``
    The emulator's access token (its ``--auth-token``), or a file holding it (read when a client is
    built): sent as ``Authorization: Bearer <token>`` on every call, gRPC and REST, JobService and
    Logging. Only with ``emulator``. Not needed on the machine that runs the emulator as its own
    user (it serves that user without one); needed when it is reached from elsewhere.
``logging_endpoint``
    Where the logs hook reads replica logs (the Cloud Logging API): ``host[:port]`` (gRPC) or
    ``https://host[:port]`` (REST), TLS with the connection's credentials; with ``emulator``, the
    emulator's (plain, ``http://`` for REST). Empty means the emulator's own endpoint with
    ``emulator`` (it serves the Logging read API on the same ports), else ``logging.googleapis.com``.
``trusted_endpoint_hosts``
    Without ``emulator``, ``api_endpoint`` and ``logging_endpoint`` must be hosts of
    ``googleapis.com`` (``hooks.endpoints``): the connection's credentials go nowhere else. Any other
    host (a Private Service Connect endpoint's IP address, a proxy) must be listed here: host names or
    addresses, comma separated (or a list), ``*.domain`` for a domain's hosts.

The token file must be a regular file, the owner's only (mode 0600 or 0400), of at most 4096 bytes;
a token sent on the emulator's plain channel to a host off this machine is logged as a warning.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from airflow_vertex_dist.hooks import CONN_TYPE, DEFAULT_CONN_ID, HOOK_NAME
from airflow_vertex_dist.hooks.connection_extra import (
    CONN_TYPES,
    GENERIC_CONN_TYPE,
    GOOGLE_CONN_TYPE,
    blank,
    check_conn_type,
    extra_names,
    extra_problems,
    fold_extra,
)
from airflow_vertex_dist.hooks.connection_form import (
    connection_fields,
    connection_type_info,
    ui_field_behaviour,
)
from airflow_vertex_dist.hooks.endpoints import (
    credentials_host_problem,
    endpoint_problem,
    read_token_file,
    scheme_of,
    warn_clear_token,
)

__all__ = [
    "CONN_TYPE",
    "CONN_TYPES",
    "DEFAULT_CONN_ID",
    "GENERIC_CONN_TYPE",
    "GOOGLE_CONN_TYPE",
    "HOOK_NAME",
    "RetryPolicy",
    "VertexConnection",
    "connection_fields",
    "connection_type_info",
    "parse_impersonation_chain",
    "ui_field_behaviour",
]


def parse_impersonation_chain(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """A chain as a tuple: ``None`` is empty, a string is split on commas, blanks are dropped."""
    if value is None:
        return ()
    parts = value.split(",") if isinstance(value, str) else list(value)
    for part in parts:
        if not isinstance(part, str):
            raise ValueError(f"impersonation_chain: each entry must be a string, got {type(part).__name__}")
    return tuple(part.strip() for part in parts if part.strip())


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff for transient API errors (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED,
    INTERNAL, a proxy's 502) and transport errors (a refused or dropped connection, a timeout), on
    both transports: ``initial_s`` growing by ``multiplier`` up to ``maximum_s``, for at most
    ``deadline_s`` in all; each attempt is given ``rpc_timeout_s``."""

    initial_s: float = 1.0
    maximum_s: float = 30.0
    multiplier: float = 2.0
    deadline_s: float = 300.0
    rpc_timeout_s: float = 60.0


class VertexConnection(BaseModel):
    """The parsed extras of a ``vertex_dist`` (or ``google_cloud_platform``) connection."""

    # defer_build: the validator is built when a hook first parses a connection, not when a DAG file
    # that imports the operators is parsed.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    project: str | None = None
    location: str | None = None
    key_path: str | None = None
    # Secret: never in a repr, a log line or an error message.
    keyfile_dict: SecretStr | None = Field(default=None, repr=False)
    credential_config_file: str | None = None
    is_anonymous: bool = False
    impersonation_chain: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    quota_project_id: str | None = None
    num_retries: int | None = Field(default=None, ge=0)
    transport: Literal["grpc", "rest"] = "grpc"
    api_endpoint: str | None = None
    #: ``None`` (not set) differs from ``False`` only for a loopback ``api_endpoint`` (see the module).
    emulator: bool | None = None
    web_endpoint: str | None = None
    logging_endpoint: str | None = None
    emulator_token: SecretStr | None = Field(default=None, repr=False)
    emulator_token_file: str | None = None
    trusted_endpoint_hosts: tuple[str, ...] = ()

    @field_validator(
        "project",
        "location",
        "key_path",
        "quota_project_id",
        "api_endpoint",
        "web_endpoint",
        "logging_endpoint",
        "num_retries",
        "emulator",
        "emulator_token",
        "emulator_token_file",
        mode="before",
    )
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value.strip() if isinstance(value, str) else value

    @field_validator("keyfile_dict", mode="before")
    @classmethod
    def _keyfile_json(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return json.dumps(value)
        if isinstance(value, str):
            if not value.strip():
                return None
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"must be the key file's JSON text ({exc.msg})") from None
            if not isinstance(parsed, dict):
                raise ValueError("must be a JSON object")
        return value

    @field_validator("credential_config_file", mode="before")
    @classmethod
    def _config_file(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return json.dumps(value)
        if isinstance(value, str):
            if not value.strip():
                return None
            if value.lstrip().startswith("{"):
                try:
                    json.loads(value)
                except json.JSONDecodeError as exc:
                    raise ValueError(
                        f"must be a credential configuration file's path or its JSON text ({exc.msg})"
                    ) from None
            return value.strip()
        return value

    @field_validator("is_anonymous", mode="before")
    @classmethod
    def _flag(cls, value: Any) -> Any:
        return False if blank(value) else value

    @field_validator("impersonation_chain", "scopes", "trusted_endpoint_hosts", mode="before")
    @classmethod
    def _chain(cls, value: Any) -> Any:
        if isinstance(value, str | list | tuple) or value is None:
            return parse_impersonation_chain(value)
        return value

    @field_validator("transport", mode="before")
    @classmethod
    def _transport(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return "grpc"
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_key(self) -> VertexConnection:
        given = [
            name
            for name in ("key_path", "keyfile_dict", "credential_config_file", "is_anonymous")
            if getattr(self, name)
        ]
        if len(given) > 1:
            raise ValueError(f"{' and '.join(given)}: give one credentials source, not {len(given)}")
        return self

    @model_validator(mode="after")
    def _endpoints(self) -> VertexConnection:
        if self.emulator and not self.api_endpoint:
            raise ValueError(
                "emulator: true needs api_endpoint, the emulator's address (host:port for gRPC, "
                "http://host:port for REST)"
            )
        given = [name for name in ("emulator_token", "emulator_token_file") if getattr(self, name)]
        if given and not self.emulator:
            raise ValueError(f'{given[0]}: only the emulator takes an access token: set "emulator": true')
        if len(given) > 1:
            raise ValueError("emulator_token and emulator_token_file: give one, not both")
        if self.web_endpoint and not self.emulator:
            raise ValueError(
                "web_endpoint: only the emulator has job pages of its own (links go to the Vertex AI "
                'console): set "emulator": true, or remove web_endpoint'
            )
        for field in ("api_endpoint", "logging_endpoint"):
            value = getattr(self, field)
            problem = value and endpoint_problem(
                field, value, transport=self.transport, emulator=self.emulator
            )
            if problem:
                raise ValueError(problem)
            trusted = self.trusted_endpoint_hosts
            problem = value and not self.emulator and credentials_host_problem(field, value, trusted)
            if problem:
                raise ValueError(problem)
        return self

    @property
    def is_emulator(self) -> bool:
        """``emulator`` is true: ``api_endpoint`` is the local emulator."""
        return self.emulator is True

    def emulator_auth_token(self) -> str | None:
        """The emulator's access token (``emulator_token``, or ``emulator_token_file`` read now and
        checked: ``hooks.endpoints.read_token_file``); None without one. ``ValueError`` naming the field
        when the file is not fit. A warning is logged when the token goes in clear off this machine."""
        if self.emulator_token is not None:
            token = self.emulator_token.get_secret_value().strip() or None
        elif self.emulator_token_file:
            token = read_token_file(self.emulator_token_file, "emulator_token_file")
        else:
            return None
        if token is not None:
            for field in ("api_endpoint", "logging_endpoint", "web_endpoint"):
                value = getattr(self, field)
                if value:
                    warn_clear_token(field, value)
        return token

    @property
    def grpc_target(self) -> str:
        """``api_endpoint`` as a gRPC target: ``host:port`` (a ``grpc://`` scheme dropped)."""
        endpoint = self.api_endpoint or ""
        return endpoint.split("://", 1)[1] if scheme_of(endpoint) == "grpc" else endpoint

    @property
    def rest_url(self) -> str:
        """``api_endpoint`` as a base URL: its scheme, else ``http://`` for the emulator and
        ``https://`` for an endpoint override."""
        endpoint = (self.api_endpoint or "").rstrip("/")
        if "://" in endpoint:
            return endpoint
        return f"{'http' if self.is_emulator else 'https'}://{endpoint}"

    @property
    def web_url(self) -> str | None:
        """The emulator's web base URL (``web_endpoint``, else its REST ``api_endpoint``); None when the
        connection is not the emulator's."""
        if not self.is_emulator:
            return None
        if self.web_endpoint:
            url = self.web_endpoint.rstrip("/")
            return url if "://" in url else f"http://{url}"
        if self.transport == "rest":
            return self.rest_url
        return None

    @property
    def logging_target(self) -> str | None:
        """The Logging endpoint: ``logging_endpoint``, else the emulator's, else None (Google's)."""
        if self.logging_endpoint:
            return self.logging_endpoint
        return self.api_endpoint if self.is_emulator else None

    @classmethod
    def known_extras(cls) -> list[str]:
        """The extra names this model reads (``scope`` for the ``scopes`` field)."""
        return extra_names(cls.model_fields)

    @classmethod
    def from_extra(
        cls,
        extra: Mapping[str, Any],
        *,
        conn_id: str = DEFAULT_CONN_ID,
        conn_type: str | None = None,
    ) -> VertexConnection:
        """Parse a connection's extras; ``ValueError`` naming ``<conn_id>.extra.<field>`` and the rule.

        ``conn_type`` (when given) must be one of ``CONN_TYPES``. A field given both plainly and with a
        prefix takes the plain value unless it is blank (the Google provider reads the plain key
        first, too).
        """
        check_conn_type(conn_type, conn_id)
        values, problems = fold_extra(extra, conn_id)
        try:
            conn = cls.model_validate(values)
        except ValidationError as exc:
            problems += extra_problems(exc, conn_id, cls.known_extras())
            raise ValueError("; ".join(problems)) from None
        if problems:
            raise ValueError("; ".join(problems))
        return conn

    def with_impersonation_chain(self, chain: str | Sequence[str] | None) -> VertexConnection:
        """This connection with ``chain`` replacing its own (``None`` keeps the connection's)."""
        if chain is None:
            return self
        return self.model_copy(update={"impersonation_chain": parse_impersonation_chain(chain)})
