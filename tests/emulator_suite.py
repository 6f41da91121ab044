"""The helpers of the emulator's own suite (emulator/tests/) that the provider's tests share: the strict
page check, the Cloud Logging clients and the admin endpoint.

The emulator's suite runs from the emulator's own install and is a package of its own (``tests`` under
``emulator/``), which this run does not import: each helper module is loaded here from its file, once,
so each lives in one place.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = [
    "EMULATOR_TESTS",
    "admin",
    "check_page",
    "gapic",
    "job_filter",
    "load",
    "logging_client",
    "text_of",
]

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


_strict_html = load("strict_html")
_logging = load("logging_support")
_capacity = load("capacity_support")

check_page = _strict_html.check_page
gapic = _logging.gapic
job_filter = _logging.job_filter
logging_client = _logging.logging_client
text_of = _logging.text_of
admin = _capacity.admin
