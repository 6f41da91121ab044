"""The README's table of tested cells, the classifiers and the floors of ``pyproject.toml`` say what the
support matrix (``tests/compat/matrix.py``) runs, no more and no less."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib
from compat import matrix

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_readme_table_is_the_matrix() -> None:
    text = (ROOT / "README.md").read_text()
    assert matrix.START in text and matrix.END in text
    table = text.split(matrix.START, 1)[1].split(matrix.END, 1)[0]
    assert table == matrix.readme_table(), "regenerate it: python tests/compat/matrix.py README.md"


def test_python_classifiers_are_the_tested_pythons() -> None:
    declared = [c for c in PYPROJECT["project"]["classifiers"] if re.fullmatch(r".*Python :: 3\.\d+", c)]
    assert declared == matrix.classifiers()
    assert matrix.python_versions() == ["3.10", "3.11", "3.12", "3.13"]
    assert PYPROJECT["project"]["requires-python"] == f">={matrix.python_versions()[0]}"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == matrix.python_versions()[0]


def test_the_lowest_cell_runs_the_declared_floors() -> None:
    floors = {}
    for req in PYPROJECT["project"]["dependencies"]:
        name, floor = re.match(r"([\w-]+)>=([\w.]+)", req).groups()  # type: ignore[union-attr]
        floors[name] = floor
    (lowest,) = (c for c in matrix.CELLS if c.resolution == "lowest-direct")
    assert floors["apache-airflow"] == lowest.airflow
    # Every Airflow minor the package declares has a cell on its oldest Python.
    minors = {c.airflow.rsplit(".", 1)[0]: c for c in matrix.CELLS if c.resolution == "highest"}
    assert sorted(minors) == ["3.1", "3.2", "3.3"]
    assert {c.python for c in minors.values() if c.exclude_newer} == {matrix.python_versions()[0]}
