"""Loading a helper module of the emulator's own suite (emulator/tests/) from its file.

The emulator's suite runs from the emulator's own install; its folder is no package this run imports.
A helper both suites share lives there once, and the provider's tests load it with ``load``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["EMULATOR_TESTS", "load"]

#: the emulator's suite, in this checkout
EMULATOR_TESTS = Path(__file__).resolve().parents[1] / "emulator" / "tests"


def load(name: str) -> ModuleType:
    """The module ``emulator/tests/<name>.py``, loaded from its file (a helper without relative imports)."""
    key = f"emulator_suite_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, EMULATOR_TESTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module
