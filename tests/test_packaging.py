"""What ships: the wheel and sdist that the build backend makes from this checkout.

Built with the backend's own PEP 517 hooks (hatchling, in the dev group) into a temporary directory: no
network, no isolated build environment.
"""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import zipfile
from email.message import Message
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "airflow_vertex_dist"

BUILD = """
import sys
import hatchling.build as backend
out = sys.argv[1]
print(backend.build_wheel(out))
print(backend.build_sdist(out))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-c", BUILD, str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    wheel_name, sdist_name = result.stdout.split()[-2:]
    return out / wheel_name, out / sdist_name


def _wheel_metadata(wheel: Path) -> tuple[list[str], Message]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
        return names, email.message_from_bytes(zf.read(meta))


def test_the_provider_publishes_no_extras_and_the_tools_are_groups(built: tuple[Path, Path]) -> None:
    """A user installs the provider alone: the test runner, torch (the example trainers) and the dev
    tools are dependency groups, which ``make install`` and the compat cells install, not extras."""
    wheel, sdist = built
    _, meta = _wheel_metadata(wheel)
    assert (meta.get_all("Provides-Extra") or []) == []
    requires = " ".join(meta.get_all("Requires-Dist") or [])
    for tool in ("ruff", "mypy", "import-linter", "pytest", "torch", "hypertune"):
        assert tool not in requires, tool
    with tarfile.open(sdist) as tf:
        [pkg_info] = [m for m in tf.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")]
        handle = tf.extractfile(pkg_info)
        assert handle is not None
        sdist_meta = email.message_from_bytes(handle.read())
    assert (sdist_meta.get_all("Provides-Extra") or []) == []
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    assert any(req.startswith("ruff") for req in groups["dev"])
    assert any(req.startswith("pytest") for req in groups["test"])
    assert [req for req in groups["examples"] if req.startswith("torch==")]
    # make install and every compat cell install the groups they need, and trials' cloudml-hypertune
    makefile = (ROOT / "Makefile").read_text()
    install = "-e . -e './emulator[hypertune]' --group test --group examples --group dev --group celery"
    assert install in makefile
    noxfile = (ROOT / "noxfile.py").read_text()
    assert 'PROJECT = ("-e", ".", "-e", "./emulator[hypertune]", "--group", "test")' in noxfile


def test_the_emulator_offers_cloudml_hypertune_for_trial_code() -> None:
    """Trial code reports metrics with cloudml-hypertune in the replica's interpreter (the emulator's own
    for a Python package spec): the emulator's ``hypertune`` extra, not a dependency of its own code."""
    project = tomllib.loads((ROOT / "emulator" / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert extras["hypertune"] == ["cloudml-hypertune"] and set(extras) == {"hypertune", "test"}
    # the emulator's own tests need neither Airflow nor the provider
    assert not [req for req in extras["test"] if "airflow" in req or "hypertune" in req]
    assert not [req for req in project["dependencies"] if "hypertune" in req]


def test_the_license_file_ships_and_matches_the_declared_license(built: tuple[Path, Path]) -> None:
    wheel, sdist = built
    license_text = (ROOT / "LICENSE").read_text()
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert declared == "Apache-2.0"
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text

    names, meta = _wheel_metadata(wheel)
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    [shipped] = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read(shipped).decode() == license_text
    with tarfile.open(sdist) as tf:
        assert any(m.name.count("/") == 1 and m.name.endswith("/LICENSE") for m in tf.getmembers())


def test_the_sdist_holds_no_virtualenv_and_no_local_results(built: tuple[Path, Path]) -> None:
    """What git ignores stays out of the sdist, the nested ignore files included (hatchling reads only
    the root one): a checkout where ``make bench`` ran holds the anchor's virtualenv under benchmarks/."""
    with tarfile.open(built[1]) as tf:
        names = [m.name.split("/", 1)[-1] for m in tf.getmembers()]
    assert not [n for n in names if n.endswith("pyvenv.cfg") or "/site-packages/" in n]
    assert not [n for n in names if n.startswith(("benchmarks/results/", ".venv", ".nox/"))]
    ignored = (ROOT / "benchmarks" / ".gitignore").read_text().split()
    assert ".venv-anchor/" in ignored and "results/" in ignored  # what the sdist's exclude mirrors


def test_the_wheel_holds_the_package_only_and_no_demo(built: tuple[Path, Path]) -> None:
    """The demo runs the checkout's dags/ folder, so it lives in scripts/ and is not installed."""
    names, _ = _wheel_metadata(wheel=built[0])
    tops = {name.split("/", 1)[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {PACKAGE}
    assert not [name for name in names if "demo" in name.rsplit("/", 1)[-1]]
    assert f"{PACKAGE}/py.typed" in names
    assert f"{PACKAGE}/specs/__init__.py" in names


def test_the_wheel_holds_the_job_view_templates(built: tuple[Path, Path]) -> None:
    """The job view's pages are rendered from package data: every template under ui/templates/."""
    names, _ = _wheel_metadata(wheel=built[0])
    templates = ROOT / PACKAGE / "ui" / "templates"
    shipped = sorted(f"{PACKAGE}/ui/templates/{path.name}" for path in templates.iterdir())
    assert shipped and set(shipped) <= set(names), sorted(set(shipped) - set(names))


def test_the_provider_wheel_holds_no_emulator_and_starts_none(built: tuple[Path, Path]) -> None:
    """The emulator is a distribution of its own: an Airflow worker that installs the provider gets no
    code that runs commands, no console script for it, and no dependency only the emulator needs."""
    names, meta = _wheel_metadata(wheel=built[0])
    assert not [name for name in names if "emulator" in name.lower()], "emulator code in the provider wheel"
    with zipfile.ZipFile(built[0]) as zf:
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = zf.read(entry_points).decode()
    assert "emulator" not in scripts
    requires = [req.split(";")[0].replace(" ", "") for req in meta.get_all("Requires-Dist") or []]
    assert not [req for req in requires if req.startswith(("psutil", "google-crc32c", "vertex-emulator"))]
