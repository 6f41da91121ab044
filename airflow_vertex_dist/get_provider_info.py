"""Provider metadata read by Airflow's ProvidersManager (``apache_airflow_provider`` entry point)."""

from __future__ import annotations

from typing import Any

from airflow_vertex_dist.common.version import package_version

__all__ = ["INTEGRATION", "get_provider_info"]

#: The one integration the hooks, operators, sensors and triggers belong to (Airflow lists them under it).
INTEGRATION = "Vertex AI distributed training"


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "airflow-vertex-dist",
        "name": "Vertex AI distributed training",
        "description": "Distributed training and hyperparameter tuning on Google Vertex AI: "
        "typed cluster specs, deferrable operators, job/replica/trial sensors and a local emulator.",
        "versions": [package_version()],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://cloud.google.com/vertex-ai/docs/training/distributed-training",
                "tags": ["gcp"],
            }
        ],
        "connection-types": [
            {
                "connection-type": "vertex_dist",
                "hook-class-name": "airflow_vertex_dist.hooks.vertex_jobs.VertexJobsHook",
                "hook-name": "Vertex AI distributed training",
                "conn-fields": {
                    "project": {
                        "label": "Project ID",
                        "description": "Default Google Cloud project.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "location": {
                        "label": "Location",
                        "description": "Default Vertex AI region, e.g. us-central1.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "key_path": {
                        "label": "Key file path",
                        "description": "Path to a credentials JSON file. Empty (with no key "
                        "JSON) means application default credentials.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "keyfile_dict": {
                        "label": "Key JSON",
                        "description": "Credentials JSON text (kept secret).",
                        "schema": {"type": ["string", "null"], "format": "password"},
                    },
                    "credential_config_file": {
                        "label": "Credential configuration file",
                        "description": "Workload identity federation: the path of a credential "
                        "configuration file, or its JSON text.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "impersonation_chain": {
                        "label": "Impersonation chain",
                        "description": "Service account to impersonate, or a "
                        "comma-separated chain ending at the "
                        "target.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "quota_project_id": {
                        "label": "Quota project ID",
                        "description": "The project billed for the API calls and whose quota they use "
                        "(the x-goog-user-project header). Empty: the credentials' own.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "transport": {
                        "label": "Transport",
                        "description": "grpc (default) or rest.",
                        "schema": {
                            "type": ["string", "null"],
                            "enum": ["grpc", "rest", None],
                            "default": "grpc",
                        },
                    },
                    "api_endpoint": {
                        "label": "API endpoint",
                        "description": "Overrides the regional Vertex AI endpoint, e.g. a Private Service "
                        "Connect endpoint: host[:port] (gRPC) or https://host[:port] (REST); TLS and the "
                        "connection's credentials. With Emulator: the emulator's address. Empty: "
                        "<location>-aiplatform.googleapis.com.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "emulator": {
                        "label": "Emulator",
                        "description": "true: API endpoint is the local emulator (anonymous credentials, "
                        "plain channel, links to its job pages, its Logging API).",
                        "schema": {"type": ["boolean", "null"]},
                    },
                    "web_endpoint": {
                        "label": "Web endpoint (emulator)",
                        "description": "The emulator's web base URL for job links, e.g. "
                        "http://127.0.0.1:8780.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "logging_endpoint": {
                        "label": "Logging endpoint",
                        "description": "Cloud Logging API endpoint for replica logs: host[:port] (gRPC) "
                        "or https://host[:port] (REST). Empty: the emulator's with Emulator, else "
                        "logging.googleapis.com.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "trusted_endpoint_hosts": {
                        "label": "Trusted endpoint hosts",
                        "description": "Hosts other than *.googleapis.com that API endpoint and Logging "
                        "endpoint may name (the connection's credentials are sent there), comma separated; "
                        "*.domain for a domain's hosts. Empty: Google's hosts only.",
                        "schema": {"type": ["string", "null"]},
                    },
                },
                "ui-field-behaviour": {
                    "hidden-fields": ["host", "schema", "login", "password", "port", "extra"],
                    "relabeling": {},
                    "placeholders": {
                        "project": "my-project",
                        "location": "us-central1",
                        "impersonation_chain": "sa@my-project.iam.gserviceaccount.com",
                        "quota_project_id": "my-billing-project",
                        "api_endpoint": "us-central1-aiplatform-myendpoint.p.googleapis.com",
                        "web_endpoint": "http://127.0.0.1:8780",
                    },
                },
            }
        ],
        "hooks": [
            {
                "integration-name": INTEGRATION,
                "python-modules": ["airflow_vertex_dist.hooks.vertex_jobs"],
            }
        ],
        "operators": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_vertex_dist.operators.training",
                    "airflow_vertex_dist.operators.tuning",
                    "airflow_vertex_dist.operators.cancel",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": INTEGRATION,
                "python-modules": ["airflow_vertex_dist.sensors.jobs"],
            }
        ],
        "triggers": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_vertex_dist.triggers.jobs",
                    "airflow_vertex_dist.triggers.sensors",
                ],
            }
        ],
        "extra-links": [
            "airflow_vertex_dist.links.VertexJobLink",
        ],
        "config": {
            "vertex_dist": {
                "description": "Settings of the Vertex AI distributed training provider.",
                "options": {
                    "log_reads_per_minute": {
                        "description": "Cloud Logging read requests (entries.list) a triggerer process "
                        "may make per minute to stream replica logs into task logs, shared by every "
                        "deferred task that streams. Cloud Logging allows about 60 a minute per "
                        "project: keep the sum over your triggerers below that, with room for people "
                        "reading logs in the console.",
                        "version_added": None,  # the first release has it (no version spelled here)
                        "type": "integer",
                        "example": "30",
                        "default": "50",
                    },
                    "log_settle_seconds": {
                        "description": "How long a replica log line is left to settle before it is "
                        "streamed into a task log: each read takes the lines whose timestamp is at least "
                        "this many seconds old, so a line Cloud Logging makes readable after newer lines "
                        "(a late-arriving entry) is still streamed, in order. Lines reach the task log "
                        "this much later; 0 streams at once, and a line made readable late is then "
                        "left out.",
                        "version_added": None,
                        "type": "float",
                        "example": "5",
                        "default": "2",
                    },
                },
            },
        },
    }
