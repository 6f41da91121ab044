"""One docstring style: Markdown code spans (double backticks), which mkdocstrings renders as they are.

Sphinx roles (a role name such as ``:class:`` or ``:func:`` before a backticked name) would reach the
API reference as a role name in front of the code; the docs build has no step that strips them, so none
may appear. ``:param x:`` fields (the configured docstring style) are not roles and stay.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what the docs render: the package's docstrings, and the example DAGs and scripts they include
TREES = ("airflow_vertex_dist", "dags", "scripts")
ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`")


def _docstrings(path: Path) -> Iterator[tuple[int, str]]:
    """Every docstring of a module: of the module, classes and functions, and attribute docstrings (a
    string expression statement after an assignment)."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                yield node.lineno, node.value.value


def _sources() -> list[Path]:
    return sorted(p for tree in TREES for p in (ROOT / tree).rglob("*.py") if "__pycache__" not in p.parts)


def test_the_role_pattern_finds_roles_and_not_fields() -> None:
    role = ":class" + ":"  # spelled in two parts, so that this file shows no role itself
    assert ROLE.search(f"see {role}`~airflow_vertex_dist.specs.Machine`")
    assert ROLE.search(":py" + ":func:`load_spec`")
    assert not ROLE.search(":param job_name: the job's resource name")
    assert not ROLE.search("``Machine`` and ``load_spec``")


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_sphinx_role_in_a_docstring(path: Path) -> None:
    found = [f"{path.relative_to(ROOT)}:{line}" for line, text in _docstrings(path) if ROLE.search(text)]
    assert not found, f"Sphinx roles in docstrings (use ``name``): {found}"
