"""The job view's plugin: registered through the ``airflow.plugins`` entry point, with a task-instance
view whose href carries the UI's placeholders, a nav entry, and the app mounted under ``PREFIX``;
Airflow's own plugin manager accepts both views."""

from __future__ import annotations

from importlib.metadata import entry_points

from airflow_vertex_dist.ui.app import PREFIX
from airflow_vertex_dist.ui.plugin import LazyApp, VertexDistUiPlugin


def test_the_entry_point_names_the_plugin() -> None:
    found = {ep.name: ep.value for ep in entry_points(group="airflow.plugins")}
    assert found["airflow_vertex_dist_ui"] == "airflow_vertex_dist.ui.plugin:VertexDistUiPlugin"


def test_the_views_and_the_app() -> None:
    views = {view["destination"]: view for view in VertexDistUiPlugin.external_views}
    assert views["task_instance"]["href"] == f"{PREFIX}/ti/{{DAG_ID}}/{{RUN_ID}}/{{TASK_ID}}/{{MAP_INDEX}}"
    assert views["nav"]["href"] == f"{PREFIX}/jobs"
    (app,) = VertexDistUiPlugin.fastapi_apps
    assert app["url_prefix"] == PREFIX and isinstance(app["app"], LazyApp)


def test_airflows_plugin_manager_loads_both_views() -> None:
    from airflow import plugins_manager

    plugins_manager._get_plugins.cache_clear()
    plugins_manager._get_ui_plugins.cache_clear()
    external, _ = plugins_manager._get_ui_plugins()
    routes = {view.get("url_route") for view in external}
    assert {"vertex_ai_job", "vertex_ai_jobs"} <= routes
    apps, _ = plugins_manager.get_fastapi_plugins()
    assert any(app["url_prefix"] == PREFIX for app in apps)
