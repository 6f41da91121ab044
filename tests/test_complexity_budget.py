"""The complexity budget (scripts/complexity_budget.py, run by ``make lint``): real ruff on a small tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import complexity_budget as budget  # noqa: E402

BRANCHES = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(6))
BRANCHY = "def {name}(x):\n" + BRANCHES + "    return -1\n"


def _tree(tmp_path: Path, names: list[str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.ruff.lint.mccabe]\nmax-complexity = 3\n")
    functions = [BRANCHY.format(name=n) for n in names] + ["def ok():\n    return 1\n"]
    (tmp_path / "mod.py").write_text("\n\n".join(functions))
    return tmp_path


def test_it_measures_the_functions_above_the_limit(tmp_path: Path) -> None:
    assert budget.measure(_tree(tmp_path, ["a", "b"])) == {"mod.py::a": 7, "mod.py::b": 7}


def test_a_new_function_above_the_limit_breaks_it(tmp_path: Path) -> None:
    found = budget.measure(_tree(tmp_path, ["a", "b"]))
    problems = budget.check(found, {"mod.py::a": 7})
    assert problems == ["mod.py::b has complexity 7, above the limit: split it (the list only shrinks)"]


def test_a_listed_function_may_not_grow(tmp_path: Path) -> None:
    found = budget.measure(_tree(tmp_path, ["a"]))
    assert "grew from complexity 5 to 7" in budget.check(found, {"mod.py::a": 5})[0]
    assert budget.check(found, {"mod.py::a": 7}) == []


def test_a_line_of_a_split_function_must_go(tmp_path: Path) -> None:
    found = budget.measure(_tree(tmp_path, ["a"]))
    assert budget.check(found, {"mod.py::a": 7, "mod.py::gone": 20}) == [
        "mod.py::gone is within the limit now (or gone): take its line out of complexity_allow.txt"
    ]


def test_write_takes_lines_out_and_never_adds(tmp_path: Path) -> None:
    tree = _tree(tmp_path, ["a"])
    allow = tmp_path / "allow.txt"
    allow.write_text("# header\nmod.py::a 9\nmod.py::gone 20\n")
    assert budget.main(["--root", str(tree), "--allow", str(allow), "--write"]) == 0
    assert allow.read_text() == "# header\nmod.py::a 7\n"
    allow.write_text("# header\n")
    assert budget.main(["--root", str(tree), "--allow", str(allow), "--write"]) == 1
    assert allow.read_text() == "# header\n"


def test_the_repository_keeps_its_budget() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "complexity_budget.py")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
