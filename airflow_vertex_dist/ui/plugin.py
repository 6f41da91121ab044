"""The job view's Airflow plugin (registered through the ``airflow.plugins`` entry point): the FastAPI
app under ``/vertex-dist`` and two external views (Airflow 3.1 and later): a "Vertex AI job" tab on
each task instance, and a "Vertex AI jobs" nav entry listing recent jobs."""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_vertex_dist.ui.app import PREFIX

__all__ = ["LazyApp", "VertexDistUiPlugin", "external_views"]


def external_views() -> list[dict[str, Any]]:
    """The views the UI shows: on a task instance (the ``{DAG_ID}``, ``{RUN_ID}``, ``{TASK_ID}`` and
    ``{MAP_INDEX}`` placeholders are filled by the UI) and in the nav bar."""
    return [
        {
            "name": "Vertex AI job",
            "href": f"{PREFIX}/ti/{{DAG_ID}}/{{RUN_ID}}/{{TASK_ID}}/{{MAP_INDEX}}",
            "destination": "task_instance",
            "url_route": "vertex_ai_job",
        },
        {
            "name": "Vertex AI jobs",
            "href": f"{PREFIX}/jobs",
            "destination": "nav",
            "category": "browse",
            "url_route": "vertex_ai_jobs",
        },
    ]


class LazyApp:
    """An ASGI app that builds the view's FastAPI app on its first request: the plugin is loaded by
    every Airflow process (scheduler, triggerer, workers), and only the API server serves the view, so
    only it imports FastAPI and the API server's security module."""

    def __init__(self) -> None:
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.app is None:
            from airflow_vertex_dist.ui.app import create_app

            self.app = create_app()
        await self.app(scope, receive, send)


class VertexDistUiPlugin(AirflowPlugin):
    """The job view: ``fastapi_apps`` (one app under ``PREFIX``) and ``external_views``."""

    name = "airflow_vertex_dist_ui"
    fastapi_apps = [{"app": LazyApp(), "url_prefix": PREFIX, "name": "Vertex AI jobs"}]
    external_views = external_views()
