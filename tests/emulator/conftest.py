"""Emulator fixtures shared by every emulator test (and other parts' tests that need an API peer)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_vertex_dist.emulator import testing
from airflow_vertex_dist.emulator.app import Emulator


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
