"""A local Vertex AI JobService: CustomJobs and HyperparameterTuningJobs over gRPC and REST, run as
local processes. Start it with ``vertex-emulator`` or ``Emulator(config).start()``.

Names are loaded lazily, so importing a submodule (``vertex_emulator.core.config``) does not pull in
gRPC.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vertex_emulator.app import Emulator
    from vertex_emulator.core.config import Capacity, EmulatorConfig, Faults

__all__ = ["Capacity", "Emulator", "EmulatorConfig", "Faults"]

_WHERE = {
    "Capacity": "core.config",
    "Emulator": "app",
    "EmulatorConfig": "core.config",
    "Faults": "core.config",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
