"""The support matrix's compat cells (``tests/compat/matrix.py``), one nox session each.

Run by ``make test`` (``make compat`` alone). Each session makes a uv virtualenv on an interpreter found on
this machine (a pyenv root's, or on ``PATH``; uv never downloads one: ``UV_PYTHON_DOWNLOADS=never``),
installs the project, its ``test`` dependency group (uv's ``--group``, read from ``pyproject.toml``), the
emulator's distribution (``emulator/``, with its ``hypertune`` extra) and the cell's Airflow, resolved as
of the cell's day, and runs the compat suite. No cell installs torch (the ``examples`` group).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nox

ROOT = Path(__file__).resolve().parent


def _load_matrix() -> Any:
    path = ROOT / "tests" / "compat" / "matrix.py"
    spec = importlib.util.spec_from_file_location("avd_matrix", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["avd_matrix"] = module  # dataclasses look their module up while building the class
    spec.loader.exec_module(module)
    return module


matrix = _load_matrix()


def _pyenv_root() -> Path | None:
    if os.environ.get("PYENV_ROOT"):
        return Path(os.environ["PYENV_ROOT"])
    pyenv = shutil.which("pyenv")
    if pyenv is None:
        return None
    out = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=False)
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def _expose_interpreters() -> None:
    """Put the pyenv root's interpreters on PATH (after what is there), so nox and uv find
    ``python3.10`` and the others wherever this machine keeps them; nothing is downloaded."""
    root = _pyenv_root()
    if root is None:
        return
    bins = sorted(str(p) for p in (root / "versions").glob("*/bin") if p.is_dir())
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), *bins])


_expose_interpreters()
os.environ["UV_PYTHON_DOWNLOADS"] = "never"
os.environ.setdefault("UV_LINK_MODE", "copy")  # the uv cache and the virtualenvs may be on other disks
nox.options.download_python = "never"
nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["compat"]


#: What every cell installs besides its Airflow (``uv pip install`` arguments; the group from pyproject.toml).
PROJECT = ("-e", ".", "-e", "./emulator[hypertune]", "--group", "test")

VERSIONS = (
    "import airflow, grpc, pydantic, google.cloud.aiplatform_v1;"
    "print('airflow', airflow.__version__, 'pydantic', pydantic.VERSION, 'grpcio', grpc.__version__)"
)


@nox.session(venv_backend="uv")
@nox.parametrize(
    "python,cell",
    [(cell.python, cell) for cell in matrix.CELLS],
    ids=[cell.name for cell in matrix.CELLS],
)
def compat(session: nox.Session, cell: Any) -> None:
    """Install one cell and run the compat suite there."""
    args = ["--resolution", cell.resolution]
    if cell.exclude_newer:
        args += ["--exclude-newer", cell.exclude_newer]
    if cell.resolution == "lowest-direct":
        # Every direct dependency at its floor: the project's own declaration decides Airflow too.
        session.install(*args, *PROJECT)
    else:
        session.install(*args, *PROJECT, f"apache-airflow=={cell.airflow}")
    session.run("python", "-c", VERSIONS)
    session.run(
        "python", "-m", "pytest", "-p", "no:cacheprovider", *matrix.COMPAT_TESTS, *session.posargs,
        env={"AVD_COMPAT_AIRFLOW": cell.airflow},
    )
