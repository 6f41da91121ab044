"""The ``vertex_dist`` connection form: its fields, as Airflow's connection UI shows them.

Declared once here. ``connection_fields()`` is the provider-info ``conn-fields`` shape Airflow >= 3.2
reads (``get_provider_info.py`` holds the same dict as a literal, checked by a test); the hook's
``get_connection_form_widgets()`` builds wtforms fields from it for older Airflow versions. Pure: no
Google import.
"""

from __future__ import annotations

from typing import Any

from airflow_vertex_dist.hooks import CONN_TYPE, HOOK_NAME

__all__ = ["connection_fields", "connection_type_info", "ui_field_behaviour"]

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
    "quota_project_id": {
        "label": "Quota project ID",
        "description": "The project billed for the API calls and whose quota they use (the "
        "x-goog-user-project header). Empty: the credentials' own.",
    },
    "transport": {
        "label": "Transport",
        "description": "grpc (default) or rest.",
        "enum": ["grpc", "rest"],
        "default": "grpc",
    },
    "api_endpoint": {
        "label": "API endpoint",
        "description": "Overrides the regional Vertex AI endpoint, e.g. a Private Service Connect "
        "endpoint: host[:port] (gRPC) or https://host[:port] (REST); TLS and the connection's "
        "credentials. With Emulator: the emulator's address. Empty: <location>-aiplatform.googleapis.com.",
    },
    "emulator": {
        "label": "Emulator",
        "description": "true: API endpoint is the local emulator (anonymous credentials, plain channel, "
        "links to its job pages, its Logging API).",
        "type": "boolean",
    },
    "web_endpoint": {
        "label": "Web endpoint (emulator)",
        "description": "The emulator's web base URL for job links, e.g. http://127.0.0.1:8780.",
    },
    "logging_endpoint": {
        "label": "Logging endpoint",
        "description": "Cloud Logging API endpoint for replica logs: host[:port] (gRPC) or "
        "https://host[:port] (REST). Empty: the emulator's with Emulator, else logging.googleapis.com.",
    },
    "trusted_endpoint_hosts": {
        "label": "Trusted endpoint hosts",
        "description": "Hosts other than *.googleapis.com that API endpoint and Logging endpoint may name "
        "(the connection's credentials are sent there), comma separated; *.domain for a domain's hosts. "
        "Empty: Google's hosts only.",
    },
}


def connection_fields() -> dict[str, dict[str, Any]]:
    """The ``conn-fields`` mapping of the provider info (labels, descriptions, JSON schemas)."""
    out: dict[str, dict[str, Any]] = {}
    for name, spec in _FIELDS.items():
        schema: dict[str, Any] = {"type": [spec.get("type", "string"), "null"]}
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
            "quota_project_id": "my-billing-project",
            "api_endpoint": "us-central1-aiplatform-myendpoint.p.googleapis.com",
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
