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


def test_every_section_names_a_declared_integration() -> None:
    """Airflow lists hooks, operators, sensors and triggers under their integration: each one they name
    is declared in ``integrations`` (the schema alone does not check it), with its documentation page."""
    info = get_provider_info()
    declared = [entry["integration-name"] for entry in info["integrations"]]
    assert len(declared) == len(set(declared)) and declared
    used = {
        entry["integration-name"]
        for section in ("hooks", "operators", "sensors", "triggers")
        for entry in info[section]
    }
    assert used == set(declared)
    for entry in info["integrations"]:
        assert entry["external-doc-url"].startswith("https://cloud.google.com/vertex-ai/docs/")


def test_every_named_module_and_class_exists() -> None:
    info = get_provider_info()
    modules = [
        m
        for section in ("hooks", "operators", "sensors", "triggers")
        for entry in info[section]
        for m in entry["python-modules"]
    ]
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


PACKAGE = Path(__file__).parent.parent / "airflow_vertex_dist"
#: the provider's own section of the Airflow configuration
SECTION = "vertex_dist"


def _config_reads() -> list[tuple[str, str, str]]:
    """Every ``conf.get*(section, option, ...)`` / ``conf.has_option(...)`` call of the package, from its
    source: (place, section, option); an option that is not a string literal is reported as ``?``."""
    import ast

    reads = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
            method = node.func.attr
            if owner_name != "conf" or not (method.startswith("get") or method == "has_option"):
                continue
            args = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else "?"
                    for a in node.args[:2]]  # fmt: skip
            while len(args) < 2:
                args.append("?")
            place = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            reads.append((place, args[0], args[1]))
    return reads


def test_every_option_of_the_providers_section_that_the_code_reads_is_declared() -> None:
    reads = _config_reads()
    ours = [(place, option) for place, section, option in reads if section in (SECTION, "?")]
    assert ours, "the scan found no read of the provider's section: is it still reading conf.get*?"
    declared = get_provider_info()["config"][SECTION]["options"]
    undeclared = [f"{place}: {option}" for place, option in ours if option not in declared]
    assert not undeclared, f"read but not declared in get_provider_info()['config']: {undeclared}"
    unread = set(declared) - {option for _, option in ours}
    assert not unread, f"declared but never read: {sorted(unread)}"


def test_the_declared_defaults_are_the_codes_fallbacks() -> None:
    from airflow_vertex_dist.logs.poller import DEFAULT_READS_PER_MINUTE

    option = get_provider_info()["config"][SECTION]["options"]["log_reads_per_minute"]
    assert int(option["default"]) == DEFAULT_READS_PER_MINUTE
    assert option["type"] == "integer" and option["description"]


def test_airflows_configuration_knows_the_providers_options() -> None:
    """Airflow loads the declared section (what ``airflow config list`` shows) with its default."""
    from airflow.configuration import conf

    assert conf.getint(SECTION, "log_reads_per_minute") == 50
