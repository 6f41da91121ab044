"""Loading one of the repository's scripts (``scripts/``) from its file, as a module a test can call.

The scripts are no package: each runs as ``python scripts/<name>.py``, its own folder first on
``sys.path``. ``load_script`` puts that folder first on the path too, so a script's import of a sibling
(``import compat_cells``) works as when it runs, and registers the module under its file's stem
(dataclasses look their module up while their class is built).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["SCRIPTS", "load_script"]

#: the scripts' folder, in this checkout
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(path: Path) -> ModuleType:
    """The script at ``path``, loaded as module ``path.stem`` with its folder first on the path."""
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
