"""One docstring style: Markdown code spans (double backticks), which mkdocstrings renders as they are.

Sphinx roles (a role name such as ``class`` or ``func`` between colons, before a backticked name)
would reach the API reference as a role name in front of the code; the docs build has no step that
strips them, so none may appear. ``:param x:`` fields (the configured docstring style) are not roles and stay.

``make lint`` runs this over what the docs render: the package's docstrings, and the example DAGs and
scripts they include. It prints every role found (``path:line``) and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["ROLE", "TREES", "docstrings", "main", "roles"]

ROOT = Path(__file__).resolve().parents[1]
#: what the docs render: the package's docstrings, and the example DAGs and scripts they include
TREES = ("airflow_vertex_dist", "dags", "scripts")
ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`")


def docstrings(path: Path) -> Iterator[tuple[int, str]]:
    """Every docstring of a module: of the module, classes and functions, and attribute docstrings (a
    string expression statement after an assignment)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                yield node.lineno, node.value.value


def roles(root: Path, trees: Sequence[str] = TREES) -> list[str]:
    """``path:line`` of every docstring under ``root``'s ``trees`` that holds a Sphinx role."""
    sources = sorted(p for tree in trees for p in (root / tree).rglob("*.py") if "__pycache__" not in p.parts)
    return [
        f"{path.relative_to(root)}:{line}"
        for path in sources
        for line, text in docstrings(path)
        if ROLE.search(text)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fail on a Sphinx role in a docstring (use ``name``).")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    found = roles(args.root)
    for where in found:
        print(f"{where}: a Sphinx role in a docstring: write the name as a code span (``name``)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
