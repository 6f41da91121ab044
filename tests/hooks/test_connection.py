from __future__ import annotations

import json

import pytest

from airflow_vertex_dist.hooks.connection import (
    VertexConnection,
    connection_fields,
    connection_type_info,
    ui_field_behaviour,
)
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook, VertexJobsHook


def test_defaults() -> None:
    conn = VertexConnection.from_extra({})
    assert conn.transport == "grpc"
    assert not conn.is_emulator
    assert conn.impersonation_chain == ()


def test_prefixed_and_blank_fields() -> None:
    conn = VertexConnection.from_extra(
        {
            "extra__vertex_dist__project": "p1",
            "location": "",
            "extra__vertex_dist__location": "europe-west4",
            "impersonation_chain": "a@x.iam.gserviceaccount.com, b@x.iam.gserviceaccount.com",
            "transport": "REST",
            "key_path": "  ",
        }
    )
    assert conn.project == "p1"
    assert conn.location == "europe-west4"
    assert conn.impersonation_chain == ("a@x.iam.gserviceaccount.com", "b@x.iam.gserviceaccount.com")
    assert conn.transport == "rest"
    assert conn.key_path is None


def test_emulator_endpoints() -> None:
    grpc_conn = VertexConnection.from_extra(
        {"api_endpoint": "127.0.0.1:9000", "web_endpoint": "127.0.0.1:9001"}
    )
    assert grpc_conn.is_emulator
    assert grpc_conn.grpc_target == "127.0.0.1:9000"
    assert grpc_conn.web_url == "http://127.0.0.1:9001"
    rest_conn = VertexConnection.from_extra({"api_endpoint": "http://127.0.0.1:9001/", "transport": "rest"})
    assert rest_conn.rest_url == "http://127.0.0.1:9001"
    assert rest_conn.web_url == "http://127.0.0.1:9001"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"transport": "http2"}, r"c1\.extra\.transport: Input should be 'grpc' or 'rest'"),
        ({"projet": "p"}, r"c1\.extra\.projet: unknown field \(did you mean project\? known: project, "),
        ({"keyfile_dict": "{not json"}, r"c1\.extra\.keyfile_dict: must be the key file's JSON text"),
        ({"keyfile_dict": "[1]"}, r"c1\.extra\.keyfile_dict: must be a JSON object"),
        ({"key_path": "/k.json", "keyfile_dict": "{}"}, r"c1\.extra: key_path and keyfile_dict: give one"),
        ({"api_endpoint": "http://127.0.0.1:1"}, r"is a http URL but transport is grpc"),
    ],
)
def test_bad_extras_name_the_field(extra: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VertexConnection.from_extra(extra, conn_id="c1")


def test_logging_endpoint_defaults_to_the_emulators() -> None:
    assert VertexConnection.from_extra({"api_endpoint": "127.0.0.1:8781"}).logging_target == "127.0.0.1:8781"
    own = VertexConnection.from_extra({"api_endpoint": "127.0.0.1:8781", "logging_endpoint": "127.0.0.1:9"})
    assert own.logging_target == "127.0.0.1:9"
    assert VertexConnection.from_extra({"logging_endpoint": " "}).logging_target is None


def test_keyfile_dict_accepts_object() -> None:
    conn = VertexConnection.from_extra({"keyfile_dict": {"type": "service_account"}})
    assert conn.keyfile_dict is not None
    assert json.loads(conn.keyfile_dict.get_secret_value()) == {"type": "service_account"}


def test_ui_metadata() -> None:
    fields = connection_fields()
    assert set(fields) == {
        "project",
        "location",
        "key_path",
        "keyfile_dict",
        "credential_config_file",
        "impersonation_chain",
        "transport",
        "api_endpoint",
        "web_endpoint",
        "logging_endpoint",
    }
    assert fields["keyfile_dict"]["schema"]["format"] == "password"
    info = connection_type_info()
    assert info["connection-type"] == "vertex_dist"
    assert info["hook-class-name"] == f"{VertexJobsHook.__module__}.{VertexJobsHook.__qualname__}"
    assert "password" in info["ui-field-behaviour"]["hidden-fields"]
    assert VertexJobsHook.get_ui_field_behaviour() == ui_field_behaviour()


def test_providers_manager_reads_the_declarative_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow's own ProvidersManager turns conn-fields into form widgets (no wtforms needed)."""
    from airflow.providers_manager import ProviderInfo, ProvidersManager

    # a fresh singleton, the real one restored afterwards
    monkeypatch.setattr(ProvidersManager, "_instance", None)
    monkeypatch.setattr(ProvidersManager, "_initialized", False)
    monkeypatch.setattr(ProvidersManager, "_initialization_stack_trace", None)
    manager = ProvidersManager()
    manager._provider_dict["airflow-vertex-dist"] = ProviderInfo(
        version="0.1.0", data={"connection-types": [connection_type_info()]}
    )
    manager._load_ui_metadata()
    widget = manager._connection_form_widgets["extra__vertex_dist__keyfile_dict"]
    assert widget.is_sensitive
    assert manager._hook_name_dict["vertex_dist"] == "Vertex AI distributed training"
    assert manager._field_behaviours["vertex_dist"]["hidden_fields"][0] == "host"


def test_hook_init_touches_nothing() -> None:
    hook = VertexJobsHook("no_such_connection", project_id="p", location="l")
    assert hook.vertex_dist_conn_id == "no_such_connection"
    assert hook.conn_name_attr == "vertex_dist_conn_id"
    assert hook.default_conn_name == "vertex_dist_default"
    assert hook.conn_type == "vertex_dist"
    VertexJobsAsyncHook("no_such_connection")


def test_hook_reads_env_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT",
        json.dumps(
            {
                "conn_type": "vertex_dist",
                "extra": {
                    "project": "proj",
                    "location": "us-central1",
                    "api_endpoint": "127.0.0.1:1",
                    "web_endpoint": "http://127.0.0.1:2",
                },
            }
        ),
    )
    hook = VertexJobsHook()
    assert hook.parent == "projects/proj/locations/us-central1"
    assert hook.is_emulator
    name = "projects/proj/locations/us-central1/customJobs/123"
    assert hook.console_url(name) == f"http://127.0.0.1:2/ui/{name}"
    assert VertexJobsHook(location="asia-east1").parent == "projects/proj/locations/asia-east1"


def test_console_url_for_vertex(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT",
        json.dumps({"conn_type": "vertex_dist", "extra": {"project": "proj", "location": "us-central1"}}),
    )
    url = VertexJobsHook().console_url("projects/proj/locations/us-central1/hyperparameterTuningJobs/77")
    assert url == (
        "https://console.cloud.google.com/vertex-ai/locations/us-central1/training/77/cpu?project=proj"
    )
    with pytest.raises(ValueError, match=r"job_name: 'customJobs/1' is not a job name"):
        VertexJobsHook().console_url("customJobs/1")


def test_missing_location_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT",
        json.dumps({"conn_type": "vertex_dist", "extra": {"api_endpoint": "127.0.0.1:1"}}),
    )
    with pytest.raises(ValueError, match=r"vertex_dist_default\.extra\.location: no location"):
        _ = VertexJobsHook(project_id="p").parent
    with pytest.raises(ValueError, match=r"vertex_dist_default\.extra\.project: no project"):
        _ = VertexJobsHook(location="l").parent


def test_legacy_form_methods_live_on_the_connection_hook_itself() -> None:
    """Airflow < 3.2 reads them from the hook class's own __dict__, never from a base class."""
    assert "get_connection_form_widgets" in VertexJobsHook.__dict__
    assert "get_ui_field_behaviour" in VertexJobsHook.__dict__
    try:
        import flask_appbuilder  # noqa: F401
    except ImportError:
        # Without the old web server's UI packages Airflow expects exactly this ImportError.
        with pytest.raises(ImportError) as info:
            VertexJobsHook.get_connection_form_widgets()
        assert info.value.name in ("flask_appbuilder", "wtforms", "flask_babel")
    else:  # pragma: no cover - only where the pre-3.2 UI packages are installed
        widgets = VertexJobsHook.get_connection_form_widgets()
        assert set(widgets) == set(connection_fields())


def test_connection_type_info_fits_airflows_provider_info_schema() -> None:
    import importlib.resources

    import jsonschema

    schema = json.loads(
        importlib.resources.files("airflow").joinpath("provider_info.schema.json").read_text()
    )
    info = {
        "package-name": "airflow-vertex-dist",
        "name": "n",
        "description": "d",
        "connection-types": [connection_type_info()],
    }
    jsonschema.validators.validator_for(schema)(schema).validate(info)
