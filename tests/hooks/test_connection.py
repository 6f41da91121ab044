from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from airflow_vertex_dist.hooks.connection import (
    VertexConnection,
    connection_fields,
    connection_type_info,
    ui_field_behaviour,
)
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook, VertexJobsHook

from .google_form import FORM_FIELDS, PREFIX, REFUSED, airflow2_form, airflow3_form, legacy_form

PSC = "us-central1-aiplatform-psc1.p.googleapis.com"


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
        {"api_endpoint": "127.0.0.1:9000", "web_endpoint": "127.0.0.1:9001", "emulator": True}
    )
    assert grpc_conn.is_emulator
    assert grpc_conn.grpc_target == "127.0.0.1:9000"
    assert grpc_conn.web_url == "http://127.0.0.1:9001"
    rest_conn = VertexConnection.from_extra(
        {"api_endpoint": "http://127.0.0.1:9001/", "transport": "rest", "emulator": "true"}
    )
    assert rest_conn.is_emulator
    assert rest_conn.rest_url == "http://127.0.0.1:9001"
    assert rest_conn.web_url == "http://127.0.0.1:9001"
    assert (
        VertexConnection.from_extra(
            {"api_endpoint": "127.0.0.1:9001", "transport": "rest", "emulator": True}
        ).rest_url
        == "http://127.0.0.1:9001"
    )


@pytest.mark.parametrize(
    ("extra", "grpc_target", "rest_url"),
    [
        ({"api_endpoint": PSC}, PSC, None),
        ({"api_endpoint": "10.8.0.5:443", "trusted_endpoint_hosts": "10.8.0.5"}, "10.8.0.5:443", None),
        (
            {"api_endpoint": "127.0.0.1:8443", "emulator": False, "trusted_endpoint_hosts": ["127.0.0.1"]},
            "127.0.0.1:8443",
            None,
        ),
        (
            {"api_endpoint": "dns:///private.example.com:443", "trusted_endpoint_hosts": "*.example.com"},
            "dns:///private.example.com:443",
            None,
        ),
        (
            {"api_endpoint": "europe-west4-aiplatform.googleapis.com", "transport": "rest"},
            None,
            "https://europe-west4-aiplatform.googleapis.com",
        ),
        (
            {
                "api_endpoint": "https://10.8.0.5:8443/",
                "transport": "rest",
                "trusted_endpoint_hosts": "10.8.0.5",
            },
            None,
            "https://10.8.0.5:8443",
        ),
    ],
)
def test_an_endpoint_override_is_not_the_emulator(
    extra: dict[str, object], grpc_target: str | None, rest_url: str | None
) -> None:
    """A custom endpoint is TLS with the connection's credentials: no emulator, no emulator link, the
    logs from Cloud Logging (not from the override)."""
    conn = VertexConnection.from_extra(extra)
    assert not conn.is_emulator
    assert conn.web_url is None and conn.logging_target is None
    if grpc_target is not None:
        assert conn.grpc_target == grpc_target
    if rest_url is not None:
        assert conn.rest_url == rest_url


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"transport": "http2"}, r"c1\.extra\.transport: Input should be 'grpc' or 'rest'"),
        ({"projet": "p"}, r"c1\.extra\.projet: unknown field \(did you mean project\? known: project, "),
        ({"keyfile_dict": "{not json"}, r"c1\.extra\.keyfile_dict: must be the key file's JSON text"),
        ({"keyfile_dict": "[1]"}, r"c1\.extra\.keyfile_dict: must be a JSON object"),
        ({"key_path": "/k.json", "keyfile_dict": "{}"}, r"c1\.extra: key_path and keyfile_dict: give one"),
        (
            {"api_endpoint": "http://127.0.0.1:1", "emulator": True},
            r"api_endpoint: 'http://127.0.0.1:1' is a http URL but transport is grpc",
        ),
        (
            {"api_endpoint": "https://psc.example.com"},
            r"api_endpoint: 'https://psc.example.com' is a https URL but transport is grpc",
        ),
        (
            {"api_endpoint": "http://10.0.0.9:80", "transport": "rest"},
            r"c1\.extra: api_endpoint: 'http://10\.0\.0\.9:80' is plain HTTP, which only the local emulator "
            r'speaks: set "emulator": true for the emulator, or give the https:// endpoint',
        ),
        (
            {"api_endpoint": "127.0.0.1:8781"},
            r"c1\.extra: api_endpoint: '127\.0\.0\.1:8781' is on this machine and \"emulator\" is not set: "
            r'set "emulator": true for the local emulator .* or "emulator": false for a TLS endpoint',
        ),
        ({"api_endpoint": "localhost:8781", "web_endpoint": "x"}, r"web_endpoint: only the emulator has"),
        ({"api_endpoint": "[::1]:8781"}, r"is on this machine"),
        ({"emulator": True}, r"c1\.extra: emulator: true needs api_endpoint, the emulator's address"),
        (
            {"logging_endpoint": "http://logs.internal:80"},
            r"logging_endpoint: 'http://logs\.internal:80' is plain HTTP",
        ),
        ({"api_endpoint": "ftp://x", "transport": "rest"}, r"api_endpoint: 'ftp://x': the scheme must be"),
        ({"api_endpoint": "grpc://emulator.internal:8781"}, r"is plain gRPC \(grpc://\), which only"),
        ({"emulator": "maybe", "api_endpoint": "h:1"}, r"c1\.extra\.emulator: Input should be a valid bool"),
    ],
)
def test_bad_extras_name_the_field(extra: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VertexConnection.from_extra(extra, conn_id="c1")


def test_logging_endpoint_follows_the_emulator_only() -> None:
    emulator = {"api_endpoint": "127.0.0.1:8781", "emulator": True}
    assert VertexConnection.from_extra(emulator).logging_target == "127.0.0.1:8781"
    own = VertexConnection.from_extra({**emulator, "logging_endpoint": "127.0.0.1:9"})
    assert own.logging_target == "127.0.0.1:9"
    assert VertexConnection.from_extra({"logging_endpoint": " "}).logging_target is None
    # an endpoint override is for Vertex AI only: replica logs still come from Cloud Logging
    psc = {"api_endpoint": "vertex.psc.internal", "trusted_endpoint_hosts": "*.psc.internal"}
    assert VertexConnection.from_extra(psc).logging_target is None
    psc_logs = {**psc, "logging_endpoint": "logging.psc.internal"}
    assert VertexConnection.from_extra(psc_logs).logging_target == "logging.psc.internal"


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
        "quota_project_id",
        "transport",
        "api_endpoint",
        "emulator",
        "web_endpoint",
        "logging_endpoint",
        "trusted_endpoint_hosts",
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
                    "emulator": True,
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
    # an endpoint override is still Vertex AI: the link is the console's, not an emulator page
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT",
        json.dumps(
            {
                "conn_type": "vertex_dist",
                "extra": {"project": "proj", "api_endpoint": "us-central1-aiplatform-psc1.p.googleapis.com"},
            }
        ),
    )
    hook = VertexJobsHook()
    assert not hook.is_emulator
    assert hook.console_url("projects/proj/locations/us-central1/customJobs/5").startswith(
        "https://console.cloud.google.com/vertex-ai/locations/us-central1/training/5/"
    )


def test_missing_location_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT",
        json.dumps({"conn_type": "vertex_dist", "extra": {"api_endpoint": "127.0.0.1:1", "emulator": True}}),
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


# -- google_cloud_platform connections, every field of the Google provider's form (google_form.py) ------


@pytest.mark.parametrize("form", [legacy_form, airflow2_form, airflow3_form])
def test_every_field_of_the_google_form_is_read(form: Callable[..., dict[str, Any]]) -> None:
    """The form's whole extras, blank fields included, parse; what was filled in is honoured."""
    extra = form(
        project="team-project",
        keyfile_dict='{"type": "service_account"}',
        impersonation_chain="a@p.iam.gserviceaccount.com, b@p.iam.gserviceaccount.com",
        quota_project_id="team-billing",
        scope="https://www.googleapis.com/auth/cloud-platform",
    )
    assert set(FORM_FIELDS) <= {key.removeprefix(PREFIX) for key in extra}
    conn = VertexConnection.from_extra(extra, conn_type="google_cloud_platform")
    assert conn.project == "team-project"
    assert conn.quota_project_id == "team-billing"
    assert conn.impersonation_chain == ("a@p.iam.gserviceaccount.com", "b@p.iam.gserviceaccount.com")
    assert conn.scopes == ("https://www.googleapis.com/auth/cloud-platform",)
    assert conn.keyfile_dict is not None and conn.key_path is None and conn.credential_config_file is None
    assert conn.num_retries == 5 and conn.is_anonymous is False
    assert not conn.is_emulator and conn.api_endpoint is None


@pytest.mark.parametrize("form", [legacy_form, airflow2_form, airflow3_form])
def test_a_blank_google_form_is_application_default_credentials(form: Callable[..., dict[str, Any]]) -> None:
    conn = VertexConnection.from_extra(form(), conn_type="google_cloud_platform")
    assert conn == VertexConnection(num_retries=5)


@pytest.mark.parametrize("field", REFUSED)
@pytest.mark.parametrize("form", [legacy_form, airflow2_form])
def test_a_field_we_cannot_honour_is_refused_by_name_only_when_set(
    form: Callable[..., dict[str, Any]], field: str
) -> None:
    VertexConnection.from_extra(form(), conn_id="team_gcp")  # blank: ignored
    with pytest.raises(ValueError, match=rf"^team_gcp\.extra\.{field}: ") as info:
        VertexConnection.from_extra(form(**{field: "set"}), conn_id="team_gcp")
    assert str(info.value).count(f".{field}:") == 1


def test_quota_project_id_legacy_key_and_precedence() -> None:
    assert VertexConnection.from_extra({f"{PREFIX}quota_project_id": "q1"}).quota_project_id == "q1"
    # the plain key wins when both are set (the Google provider reads it first), a blank one does not
    both = {"quota_project_id": "plain", f"{PREFIX}quota_project_id": "prefixed"}
    assert VertexConnection.from_extra(both).quota_project_id == "plain"
    reversed_order = dict(reversed(list(both.items())))
    assert VertexConnection.from_extra(reversed_order).quota_project_id == "plain"
    blank_plain = {"quota_project_id": "", f"{PREFIX}quota_project_id": "prefixed"}
    assert VertexConnection.from_extra(blank_plain).quota_project_id == "prefixed"
    assert VertexConnection.from_extra({"quota_project_id": None}).quota_project_id is None


@pytest.mark.parametrize("conn_type", ["vertex_dist", "google_cloud_platform", "generic"])
def test_the_connection_types_read(conn_type: str) -> None:
    """``generic`` is what ``airflow connections add --conn-type google_cloud_platform`` stores when the
    Google provider is not installed (tests/operators/test_saved_connections.py shows it)."""
    conn = VertexConnection.from_extra(airflow2_form(project="p"), conn_type=conn_type)
    assert conn.project == "p"
