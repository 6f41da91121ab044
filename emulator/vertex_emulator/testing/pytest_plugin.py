"""The emulator's pytest plugin, registered through the ``pytest11`` entry point: installing the
distribution is enough, no conftest import needed.

Fixtures:

* ``vertex_emulator``: an emulator running for one test, its state and ``gs://`` root under the test's
  ``tmp_path``, on free loopback ports; stopped (every replica with it) when the test ends.
* ``vertex_emulator_factory``: a callable that starts one with ``EmulatorConfig`` overrides
  (``vertex_emulator_factory(image_map={...}, faults=Faults(...))``); each is stopped at the end.
* ``vertex_job_client``: the stock ``google.cloud.aiplatform_v1.JobServiceClient`` over gRPC to
  ``vertex_emulator``.
* ``vertex_session_emulator``: one emulator for the whole test session (started when a test first asks
  for it), its state under the session's temporary directory.
* ``vertex_reset_emulator``: ``vertex_session_emulator``, reset before the test (no jobs, logs or
  objects, the start settings: ``Emulator.state.reset``, app/state.py), in milliseconds where starting
  an emulator takes far longer; a test marked ``@pytest.mark.vertex_snapshot("NAME")`` gets it restored
  from its snapshot NAME instead (``vertex_session_emulator.state.snapshot("NAME")`` writes one).
* ``vertex_aiplatform``: ``vertex_emulator`` with the Vertex AI SDK pointed at it
  (``vertex_emulator.sdk.init``: project ``local-project``, location ``us-central1``), so
  ``aiplatform.CustomJob(...).run()`` runs there; the SDK's global settings are reset when the test ends.

A test of a user's own code points its client (or an Airflow connection) at
``vertex_emulator.grpc_target`` / ``vertex_emulator.rest_endpoint``, and ``gs://`` at
``vertex_emulator.config.storage_endpoint`` (``STORAGE_EMULATOR_HOST``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from vertex_emulator.app import Emulator

# The emulator's modules (gRPC, the v1 types) load only when a test asks for a fixture: pytest loads
# this plugin in every run of an environment that has the distribution installed.

__all__ = [
    "pytest_configure",
    "vertex_aiplatform",
    "vertex_emulator",
    "vertex_emulator_factory",
    "vertex_job_client",
    "vertex_reset_emulator",
    "vertex_session_emulator",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "vertex_snapshot(name): vertex_reset_emulator restores the session emulator's snapshot NAME "
        "instead of resetting it",
    )


@pytest.fixture
def vertex_emulator_factory(tmp_path: Path) -> Iterator[Callable[..., Emulator]]:
    """Start emulators with config overrides; every one is stopped when the test ends."""
    with ExitStack() as stack:
        count = 0

        def start(**overrides: Any) -> Emulator:
            nonlocal count
            count += 1
            from vertex_emulator import testing

            root = tmp_path / f"vertex-emulator-{count}"
            return stack.enter_context(testing.running_emulator(root, **overrides))

        yield start


@pytest.fixture
def vertex_emulator(vertex_emulator_factory: Callable[..., Emulator]) -> Emulator:
    """An emulator running for this test (free loopback ports, state under ``tmp_path``)."""
    return vertex_emulator_factory()


@pytest.fixture(scope="session")
def vertex_session_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """One emulator for the session (free loopback ports, state under the session's temporary dir)."""
    from vertex_emulator import testing

    with testing.running_emulator(tmp_path_factory.mktemp("vertex-emulator-session")) as emulator:
        yield emulator


@pytest.fixture
def vertex_reset_emulator(vertex_session_emulator: Emulator, request: pytest.FixtureRequest) -> Emulator:
    """``vertex_session_emulator``, reset before this test, or restored from the snapshot its
    ``vertex_snapshot`` marker names."""
    marker = request.node.get_closest_marker("vertex_snapshot")
    if marker is None:
        vertex_session_emulator.state.reset()
    else:
        vertex_session_emulator.state.restore(*marker.args, **marker.kwargs)
    return vertex_session_emulator


@pytest.fixture
def vertex_job_client(vertex_emulator: Emulator) -> Any:
    """The stock ``JobServiceClient`` over gRPC to ``vertex_emulator``."""
    from vertex_emulator import testing

    return testing.grpc_client(vertex_emulator)


@pytest.fixture
def vertex_aiplatform(vertex_emulator: Emulator) -> Iterator[Emulator]:
    """``vertex_emulator``, with ``aiplatform.init`` pointed at it (``vertex_emulator.sdk.init``); the SDK's
    global settings are back to their defaults when the test ends."""
    from google.cloud.aiplatform import initializer

    from vertex_emulator import sdk

    sdk.init(endpoint=vertex_emulator.rest_endpoint, token=vertex_emulator.config.auth_token)
    try:
        yield vertex_emulator
    finally:
        initializer.global_config.__init__()  # type: ignore[misc]
