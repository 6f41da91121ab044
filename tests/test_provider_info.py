"""The provider is registered with Airflow and its literal metadata matches the code it names."""

from __future__ import annotations

import importlib
import json
from importlib.metadata import entry_points
from pathlib import Path

import jsonschema

from airflow_vertex_dist.get_provider_info import get_provider_info
from airflow_vertex_dist.hooks.connection import connection_type_info


def test_entry_point_is_wired() -> None:
    eps = entry_points(group="apache_airflow_provider")
    ours = [ep for ep in eps if ep.value.startswith("airflow_vertex_dist.")]
    assert len(ours) == 1
    assert ours[0].load() is get_provider_info


def test_literal_connection_entry_matches_the_hook() -> None:
    assert get_provider_info()["connection-types"] == [connection_type_info()]


def test_validates_against_airflows_provider_info_schema() -> None:
    import airflow

    schema_path = Path(airflow.__file__).parent / "provider_info.schema.json"
    schema = json.loads(schema_path.read_text())
    jsonschema.validate(get_provider_info(), schema)


def test_every_named_module_and_class_exists() -> None:
    info = get_provider_info()
    modules = [m for section in ("hooks", "operators", "sensors", "triggers") for entry in info[section]
               for m in entry["python-modules"]]
    for module in modules:
        importlib.import_module(module)
    for dotted in [info["connection-types"][0]["hook-class-name"], *info["extra-links"]]:
        module, _, name = dotted.rpartition(".")
        assert hasattr(importlib.import_module(module), name), dotted


def test_providers_manager_sees_the_connection_type() -> None:
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    assert "airflow-vertex-dist" in ProvidersManager().providers
    hooks = ProvidersManagerTaskRuntime().hooks
    assert "vertex_dist" in hooks
    assert hooks["vertex_dist"].hook_class_name == "airflow_vertex_dist.hooks.vertex_jobs.VertexJobsHook"


def test_airflows_plugin_manager_loads_the_listener_plugin() -> None:
    """The package's entry-point plugin reaches Airflow's listener manager (what the API server fires)."""
    from airflow.listeners.listener import get_listener_manager
    from airflow.plugins_manager import _get_plugins

    from airflow_vertex_dist.listeners import ManualStateListener

    plugins, errors = _get_plugins()
    assert not {k: v for k, v in errors.items() if "airflow_vertex_dist" in k}, errors
    assert "airflow_vertex_dist" in [p.name for p in plugins]
    assert any(isinstance(p, ManualStateListener) for p in get_listener_manager().pm.get_plugins())
