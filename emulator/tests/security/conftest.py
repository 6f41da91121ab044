"""Emulators for the probes: one open on loopback, one that requires an access token.

Their jobs stay QUEUED: the probes are about the API, not about running replicas.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from probes import TOKEN, Http

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Faults


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with testing.running_emulator(tmp_path_factory.mktemp("boundary"), faults=Faults(queued_s=3600)) as em:
        yield em


@pytest.fixture(scope="module")
def web(emulator: Emulator) -> Http:
    return Http(emulator)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    root = tmp_path_factory.mktemp("guarded")
    with testing.running_emulator(root, auth_token=TOKEN, faults=Faults(queued_s=3600)) as em:
        yield em
