"""``vertex_emulator.sdk``: the Vertex AI SDK pointed at an emulator in one step, and the plugin's
``vertex_aiplatform`` fixture. The jobs the SDK runs there (``CustomJob``, ``HyperparameterTuningJob``)
are the README's and docs/emulator.md's examples, run by the repository's tests/test_doc_blocks.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from vertex_emulator import sdk
from vertex_emulator.app import Emulator


@pytest.fixture
def fresh_sdk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process-wide SDK configuration of this test's own (aiplatform.init sets a global one)."""
    from google.cloud.aiplatform import initializer

    monkeypatch.setattr(initializer, "global_config", initializer._Config())
    monkeypatch.delenv(sdk.ENDPOINT_ENV, raising=False)
    monkeypatch.delenv(sdk.TOKEN_ENV, raising=False)
    yield


def test_the_endpoint_is_plain_http_from_the_argument_the_environment_or_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(sdk.ENDPOINT_ENV, raising=False)
    assert sdk.resolve_endpoint() == "http://127.0.0.1:8780" == sdk.DEFAULT_ENDPOINT
    assert sdk.resolve_endpoint("127.0.0.1:9780") == "http://127.0.0.1:9780"
    assert sdk.resolve_endpoint("http://localhost:9780/") == "http://localhost:9780"
    monkeypatch.setenv(sdk.ENDPOINT_ENV, "127.0.0.1:9999")
    assert sdk.resolve_endpoint() == "http://127.0.0.1:9999"
    assert sdk.resolve_endpoint("http://127.0.0.1:1") == "http://127.0.0.1:1"
    with pytest.raises(ValueError, match="plain HTTP, not HTTPS"):
        sdk.resolve_endpoint("https://127.0.0.1:8780")


def test_credentials_are_anonymous_unless_a_token_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from google.auth.credentials import AnonymousCredentials

    monkeypatch.delenv(sdk.TOKEN_ENV, raising=False)
    assert isinstance(sdk.credentials(), AnonymousCredentials)
    assert sdk.credentials("s3cret").token == "s3cret"
    monkeypatch.setenv(sdk.TOKEN_ENV, "from-env")
    assert sdk.credentials().token == "from-env"


def test_init_reaches_the_emulator_with_no_application_default_credentials(
    fresh_sdk: None, vertex_emulator: Emulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from google.cloud import aiplatform

    # no Application Default Credentials anywhere: the SDK would fail with DefaultCredentialsError
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "none.json"))
    monkeypatch.setenv(sdk.ENDPOINT_ENV, vertex_emulator.rest_endpoint)
    sdk.init(project="local-project", location="us-central1")
    assert aiplatform.CustomJob.list() == []


def test_init_sends_the_emulators_access_token(
    fresh_sdk: None, vertex_emulator_factory: Callable[..., Emulator]
) -> None:
    from google.api_core import exceptions
    from google.auth.exceptions import InvalidOperation
    from google.cloud import aiplatform

    em = vertex_emulator_factory(auth_token="s3cret-token-of-the-test")
    sdk.init(endpoint=em.rest_endpoint, token="s3cret-token-of-the-test")
    assert aiplatform.CustomJob.list() == []
    sdk.init(endpoint=em.rest_endpoint)  # anonymous: refused (401, on which the SDK's REST session tries
    # to refresh its credentials, which anonymous ones cannot)
    with pytest.raises((exceptions.Unauthenticated, exceptions.PermissionDenied, InvalidOperation)):
        aiplatform.CustomJob.list()


def test_the_fixture_points_the_sdk_at_its_emulator_then_resets_it(vertex_aiplatform: Emulator) -> None:
    from google.cloud import aiplatform
    from google.cloud.aiplatform import initializer

    assert initializer.global_config.api_endpoint == vertex_aiplatform.rest_endpoint
    assert initializer.global_config.project == "local-project"
    assert aiplatform.CustomJob.list() == []
