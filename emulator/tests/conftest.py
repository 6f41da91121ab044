"""Emulator fixtures shared by every emulator test, and the test-wide settings of the emulator's suite.

The suite runs from the emulator's own install (``pip install 'vertex-emulator[hypertune,test]'``, then
``pytest`` in ``emulator/``): it imports neither Airflow nor the provider, nor the provider's tests.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import EmulatorConfig
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.runtime.runner import Runner

# the page check's asserts report their operands, as they did when it lived in a test module
pytest.register_assert_rewrite("strict_html")

# Property tests run the same examples on every run (a CI result must not depend on a random draw);
# HYPOTHESIS_PROFILE=explore draws new ones when hunting for bugs locally.
# The examples are fixed, so the health check of how fast they are drawn only measures the machine's
# load (it failed one run with "too slow" on a loaded 2-core machine): off, and no deadline per example.
settings.register_profile(
    "deterministic",
    derandomize=True,
    database=None,
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    """A started emulator on ephemeral loopback ports, state under tmp_path."""
    with testing.running_emulator(tmp_path) as em:
        yield em


@pytest.fixture
def grpc_client(emulator: Emulator) -> Iterator[Any]:
    """The stock JobServiceClient over insecure gRPC to ``emulator``."""
    client = testing.grpc_client(emulator)
    yield client
    client.transport.close()


@pytest.fixture
async def async_grpc_client(emulator: Emulator) -> AsyncIterator[Any]:
    """The stock JobServiceAsyncClient over insecure asyncio gRPC to ``emulator``."""
    client = testing.async_grpc_client(emulator)
    yield client
    await client.transport.close()


@pytest.fixture
def rest_client(emulator: Emulator) -> Iterator[Any]:
    """The stock JobServiceClient with the REST transport pointed at ``emulator``."""
    client = testing.rest_client(emulator)
    yield client
    client.transport.close()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[JobStore, EmulatorConfig, Runner]]:
    """A runner on a temporary job store and bucket root, with no server: the runner tests' peer."""
    store = JobStore(tmp_path / "state" / "jobs.sqlite3")
    config = EmulatorConfig(
        state_dir=tmp_path / "state",
        gcs_root=tmp_path / "gcs",
        stop_grace_s=1.0,
        web_base_url="http://127.0.0.1:9",
    )
    runner = Runner(store, config)
    yield store, config, runner
    runner.close()
    store.close()
