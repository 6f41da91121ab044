"""The count before a run's closing line (tests/collection_summary.py), with and without xdist."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.collection_summary import count_node_ids, function_of

_ROOT = Path(__file__).resolve().parent.parent

# 6 functions, one deselected by -k: the run keeps 5, 3 of them parametrized over 3 + 2 + 2 = 7 cases,
# and 2 plain ones: 9 items.
_TESTS = """
import pytest


def test_plain():
    pass


def test_deselected():
    pass


@pytest.mark.parametrize("n", [1, 2, 3])
def test_numbers(n):
    assert n


@pytest.mark.parametrize("s", ["a::b", "c[d]"], ids=["a::b", "c[d]"])
def test_odd_ids(s):
    assert s


class TestGroup:
    def test_in_class(self):
        pass

    @pytest.mark.parametrize("flag", [True, False])
    def test_flag(self, flag):
        assert flag in (True, False)
"""
_EXPECTED = "test functions: 5, parametrized cases: 7 (collected items: 9)"


def _run(tmp_path: Path, *args: str) -> list[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(_TESTS))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.collection_summary",
            "-p",
            "no:cacheprovider",
            "-k",
            "not deselected",
            *args,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_a_run_prints_functions_and_cases_before_pytests_closing_line(
    tmp_path: Path, workers: list[str]
) -> None:
    lines = _run(tmp_path, "-q", *workers)
    assert lines[-2] == _EXPECTED
    assert lines[-1].startswith("9 passed")  # xdist leaves the deselected out of this line


def test_collect_only_prints_the_same_counts(tmp_path: Path) -> None:
    lines = _run(tmp_path, "--collect-only", "-q")
    assert lines[-2] == _EXPECTED
    assert lines[-1].startswith("9/10 tests collected (1 deselected)")


def test_a_function_is_its_node_id_without_the_parameter_id() -> None:
    assert function_of("tests/a.py::test_x") == "tests/a.py::test_x"
    assert function_of("tests/a.py::Group::test_x[p::q[1]]") == "tests/a.py::Group::test_x"
    counts = count_node_ids(["a.py::t[1]", "a.py::t[2]", "a.py::u", "b.py::t[1]"])
    assert (counts.functions, counts.cases, counts.items) == (3, 3, 4)
