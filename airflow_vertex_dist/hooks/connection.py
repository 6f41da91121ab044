"""The ``vertex_dist`` connection: its fields, their UI description, and parsing with clear errors.

Pure (pydantic only): no Google import. The hooks turn ``VertexConnection`` into credentials and
clients in ``airflow_vertex_dist.hooks._clients``.

The hooks read two connection types: ``vertex_dist`` and the Google provider's
``google_cloud_platform``, as it is (its extras below; the Google provider package is not needed).
Fields (connection ``extra``, JSON; the prefixed ``extra__vertex_dist__<field>`` and
``extra__google_cloud_platform__<field>`` keys are accepted too):

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
``scope``
    OAuth scopes, comma separated (default ``https://www.googleapis.com/auth/cloud-platform``).
``num_retries``
    Accepted (a ``google_cloud_platform`` connection's form saves it) and not used: the hooks retry by
    their ``RetryPolicy``.

A key kept in Secret Manager (``key_secret_name``) and the client credentials grant flow
(``idp_issuer_url``, ``client_id``, ``client_secret``) are refused with an error naming the field.
``transport``
    ``grpc`` (default) or ``rest``.
``api_endpoint``
    Points the hook at a local emulator: ``host:port`` for gRPC, ``http://host:port`` for REST. Then the
    hooks use anonymous credentials and an insecure channel (plain HTTP) and ignore the credentials
    fields. Leave it empty for Vertex AI: the regional endpoint ``<location>-aiplatform.googleapis.com``
    is used.
``web_endpoint``
    The emulator's web (REST) base URL, used for links to a job's page: ``<web_endpoint>/ui/<job name>``.
    Defaults to ``api_endpoint`` when the transport is REST. The emulator serves gRPC and REST on two
    ports, so a gRPC connection to it should set both.
``logging_endpoint``
    Where the logs hook reads replica logs (the Cloud Logging API): ``host:port`` (gRPC) or
    ``http://host:port`` (REST). Empty means the emulator's own endpoint when ``api_endpoint`` points
    at the emulator (it serves the Logging read API on the same ports), else Cloud Logging's
    ``logging.googleapis.com``.
"""

from __future__ import annotations

import difflib
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

__all__ = [
    "CONN_TYPE",
    "CONN_TYPES",
    "DEFAULT_CONN_ID",
    "GOOGLE_CONN_TYPE",
    "HOOK_NAME",
    "RetryPolicy",
    "VertexConnection",
    "connection_fields",
    "connection_type_info",
    "parse_impersonation_chain",
    "ui_field_behaviour",
]

#: The Google provider's connection type, read as it is.
GOOGLE_CONN_TYPE = "google_cloud_platform"
#: The connection types the hooks read.
CONN_TYPES = (CONN_TYPE, GOOGLE_CONN_TYPE)

_PREFIXES = tuple(f"extra__{kind}__" for kind in CONN_TYPES)

#: The extra's name of a field, where it differs (the Google provider's ``scope``).
_ALIASES = {"scope": "scopes"}

#: Google provider fields this provider refuses: the rule says what to use instead.
_UNSUPPORTED = {
    "key_secret_name": "a key kept in Secret Manager is not supported here; give key_path, keyfile_dict "
    "or credential_config_file, or keep the whole connection in a secrets backend",
    "key_secret_project_id": "a key kept in Secret Manager is not supported here; give key_path, "
    "keyfile_dict or credential_config_file, or keep the whole connection in a secrets backend",
    "idp_issuer_url": "the client credentials grant flow is not supported here; use "
    "credential_config_file (workload identity federation) instead",
    "client_id": "the client credentials grant flow is not supported here; use credential_config_file "
    "(workload identity federation) instead",
    "client_secret": "the client credentials grant flow is not supported here; use "
    "credential_config_file (workload identity federation) instead",
    "idp_extra_parameters": "the client credentials grant flow is not supported here; use "
    "credential_config_file (workload identity federation) instead",
}


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


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
    """The parsed extras of a ``vertex_dist`` connection."""

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
    num_retries: int | None = Field(default=None, ge=0)
    transport: Literal["grpc", "rest"] = "grpc"
    api_endpoint: str | None = None
    web_endpoint: str | None = None
    logging_endpoint: str | None = None

    @field_validator(
        "project",
        "location",
        "key_path",
        "api_endpoint",
        "web_endpoint",
        "logging_endpoint",
        "num_retries",
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
        return False if _blank(value) else value

    @field_validator("impersonation_chain", "scopes", mode="before")
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
        if self.api_endpoint and self.transport == "grpc" and "://" in self.api_endpoint:
            scheme = self.api_endpoint.split("://", 1)[0]
            if scheme not in ("grpc", "dns"):
                raise ValueError(
                    f"api_endpoint: {self.api_endpoint!r} is a {scheme} URL but transport is grpc; "
                    "give host:port or set transport to rest"
                )
        return self

    @property
    def is_emulator(self) -> bool:
        return self.api_endpoint is not None

    @property
    def grpc_target(self) -> str:
        """``host:port`` of the emulator's gRPC server (``api_endpoint`` without a scheme)."""
        endpoint = self.api_endpoint or ""
        return endpoint.split("://", 1)[1] if "://" in endpoint else endpoint

    @property
    def rest_url(self) -> str:
        """Base URL of the emulator's REST server (``http://`` assumed when no scheme is given)."""
        endpoint = (self.api_endpoint or "").rstrip("/")
        return endpoint if "://" in endpoint else f"http://{endpoint}"

    @property
    def web_url(self) -> str | None:
        if self.web_endpoint:
            url = self.web_endpoint.rstrip("/")
            return url if "://" in url else f"http://{url}"
        if self.is_emulator and self.transport == "rest":
            return self.rest_url
        return None

    @property
    def logging_target(self) -> str | None:
        """The Logging endpoint: ``logging_endpoint``, else the emulator's, else None (Google's)."""
        if self.logging_endpoint:
            return self.logging_endpoint
        return self.api_endpoint

    @classmethod
    def known_extras(cls) -> list[str]:
        """The extra names this model reads (``scope`` for the ``scopes`` field)."""
        renamed = {field: key for key, field in _ALIASES.items()}
        return [renamed.get(name, name) for name in cls.model_fields]

    @classmethod
    def from_extra(
        cls,
        extra: Mapping[str, Any],
        *,
        conn_id: str = DEFAULT_CONN_ID,
        conn_type: str | None = None,
    ) -> VertexConnection:
        """Parse a connection's extras; ``ValueError`` naming ``<conn_id>.extra.<field>`` and the rule.

        ``conn_type`` (when given) must be ``vertex_dist`` or ``google_cloud_platform``.
        """
        if conn_type and conn_type not in CONN_TYPES:
            raise ValueError(
                f"{conn_id}.conn_type: {conn_type!r} is not a connection these hooks read "
                f"(use {' or '.join(CONN_TYPES)})"
            )
        values: dict[str, Any] = {}
        problems: list[str] = []
        for key, value in extra.items():
            name = next((key[len(p) :] for p in _PREFIXES if key.startswith(p)), key)
            if name in _UNSUPPORTED:
                if not _blank(value):
                    problems.append(f"{conn_id}.extra.{name}: {_UNSUPPORTED[name]}")
                continue
            name = _ALIASES.get(name, name)
            if name in values and _blank(value):
                continue
            values[name] = value
        try:
            conn = cls.model_validate(values)
        except ValidationError as exc:
            renamed = {field: key for key, field in _ALIASES.items()}
            for err in exc.errors(include_input=False):
                loc = ".".join(renamed.get(str(part), str(part)) for part in err["loc"])
                msg = err["msg"].removeprefix("Value error, ")
                if err["type"] == "extra_forbidden":
                    close = difflib.get_close_matches(loc, cls.known_extras(), n=1)
                    hint = f"did you mean {close[0]}? " if close else ""
                    msg = f"unknown field ({hint}known: {', '.join(cls.known_extras())})"
                problems.append(f"{conn_id}.extra{'.' + loc if loc else ''}: {msg}")
            raise ValueError("; ".join(problems)) from None
        if problems:
            raise ValueError("; ".join(problems))
        return conn

    def with_impersonation_chain(self, chain: str | Sequence[str] | None) -> VertexConnection:
        """This connection with ``chain`` replacing its own (``None`` keeps the connection's)."""
        if chain is None:
            return self
        return self.model_copy(update={"impersonation_chain": parse_impersonation_chain(chain)})


# The connection form, declared once. ``connection_fields()`` is the provider-info ``conn-fields``
# shape Airflow >= 3.2 reads; the hook's get_connection_form_widgets() builds wtforms fields from it
# for older Airflow versions.
_FIELDS: dict[str, dict[str, Any]] = {
    "project": {"label": "Project ID", "description": "Default Google Cloud project."},
    "location": {"label": "Location", "description": "Default Vertex AI region, e.g. us-central1."},
    "key_path": {
        "label": "Key file path",
        "description": "Path to a credentials JSON file. Empty (with no key JSON) means application "
        "default credentials.",
    },
    "keyfile_dict": {
        "label": "Key JSON",
        "description": "Credentials JSON text (kept secret).",
        "secret": True,
    },
    "credential_config_file": {
        "label": "Credential configuration file",
        "description": "Workload identity federation: the path of a credential configuration file, or "
        "its JSON text.",
    },
    "impersonation_chain": {
        "label": "Impersonation chain",
        "description": "Service account to impersonate, or a comma-separated chain ending at the target.",
    },
    "transport": {
        "label": "Transport",
        "description": "grpc (default) or rest.",
        "enum": ["grpc", "rest"],
        "default": "grpc",
    },
    "api_endpoint": {
        "label": "API endpoint (emulator)",
        "description": "Local emulator endpoint: host:port (gRPC) or http://host:port (REST). Uses "
        "anonymous credentials and an insecure channel. Empty for Vertex AI.",
    },
    "web_endpoint": {
        "label": "Web endpoint (emulator)",
        "description": "The emulator's web base URL for job links, e.g. http://127.0.0.1:8780.",
    },
    "logging_endpoint": {
        "label": "Logging endpoint",
        "description": "Cloud Logging API endpoint for replica logs: host:port (gRPC) or http://host:port "
        "(REST). Empty: the emulator's when API endpoint is set, else logging.googleapis.com.",
    },
}


def connection_fields() -> dict[str, dict[str, Any]]:
    """The ``conn-fields`` mapping of the provider info (labels, descriptions, JSON schemas)."""
    out: dict[str, dict[str, Any]] = {}
    for name, spec in _FIELDS.items():
        schema: dict[str, Any] = {"type": ["string", "null"]}
        if spec.get("secret"):
            schema["format"] = "password"
        if "enum" in spec:
            schema["enum"] = [*spec["enum"], None]
        if "default" in spec:
            schema["default"] = spec["default"]
        out[name] = {"label": spec["label"], "description": spec["description"], "schema": schema}
    return out


def ui_field_behaviour() -> dict[str, Any]:
    """Standard connection fields the form hides (everything lives in the extras above)."""
    return {
        "hidden_fields": ["host", "schema", "login", "password", "port", "extra"],
        "relabeling": {},
        "placeholders": {
            "project": "my-project",
            "location": "us-central1",
            "impersonation_chain": "sa@my-project.iam.gserviceaccount.com",
            "api_endpoint": "127.0.0.1:8781",
            "web_endpoint": "http://127.0.0.1:8780",
        },
    }


def connection_type_info() -> dict[str, Any]:
    """The full ``connection-types`` entry for ``get_provider_info()`` (declarative UI, Airflow >= 3.2)."""
    behaviour = ui_field_behaviour()
    return {
        "connection-type": CONN_TYPE,
        "hook-class-name": "airflow_vertex_dist.hooks.vertex_jobs.VertexJobsHook",
        "hook-name": HOOK_NAME,
        "conn-fields": connection_fields(),
        "ui-field-behaviour": {
            "hidden-fields": behaviour["hidden_fields"],
            "relabeling": behaviour["relabeling"],
            "placeholders": behaviour["placeholders"],
        },
    }
