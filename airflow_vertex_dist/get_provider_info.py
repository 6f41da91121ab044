"""Provider metadata read by Airflow's ProvidersManager (``apache_airflow_provider`` entry point)."""

from __future__ import annotations

from typing import Any

__all__ = ["get_provider_info"]


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "airflow-vertex-dist",
        "name": "Vertex AI distributed training",
        "description": "Distributed training and hyperparameter tuning on Google Vertex AI: "
        "typed cluster specs, deferrable operators, job/replica/trial sensors and a local emulator.",
        "versions": ["0.1.0"],
        "connection-types": [
            {
                "hook-class-name": "airflow_vertex_dist.hooks.vertex_jobs.VertexJobsHook",
                "connection-type": "vertex_dist",
            }
        ],
        "hooks": [
            {
                "integration-name": "Vertex AI distributed training",
                "python-modules": ["airflow_vertex_dist.hooks.vertex_jobs"],
            }
        ],
        "operators": [
            {
                "integration-name": "Vertex AI distributed training",
                "python-modules": [
                    "airflow_vertex_dist.operators.training",
                    "airflow_vertex_dist.operators.tuning",
                    "airflow_vertex_dist.operators.cancel",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": "Vertex AI distributed training",
                "python-modules": ["airflow_vertex_dist.sensors.jobs"],
            }
        ],
        "triggers": [
            {
                "integration-name": "Vertex AI distributed training",
                "python-modules": ["airflow_vertex_dist.triggers.jobs"],
            }
        ],
        "extra-links": [
            "airflow_vertex_dist.links.VertexJobLink",
        ],
    }
