"""A plain pytest run records its reliability figures outside the checkout; make points them at the
committed file that docs/reliability.md is generated from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = "import sys; sys.path.insert(0, 'tests'); from stack.figures import FIGURES_PATH; print(FIGURES_PATH)"


def test_without_make_the_figures_go_to_the_temporary_directory() -> None:
    env = {k: v for k, v in os.environ.items() if k != "AVD_FIGURES"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    path = Path(out.stdout.strip())
    assert ROOT not in path.parents


def make_sees(**env: str) -> str:
    """``AVD_FIGURES`` as a make recipe of the Makefile sees it, bracketed, with ``env`` (and no
    ``AVD_FIGURES`` unless ``env`` sets it) in make's environment."""
    out = subprocess.run(
        ["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", "-", "show-figures"],
        cwd=ROOT,
        input='show-figures:\n\t@echo "[$$AVD_FIGURES]"\n',
        capture_output=True,
        text=True,
        check=True,
        env={**{k: v for k, v in os.environ.items() if k != "AVD_FIGURES"}, **env},
    )
    return out.stdout.strip()


def test_make_points_the_figures_at_the_committed_file() -> None:
    assert make_sees() == f"[{ROOT / 'scripts' / 'stack' / 'figures.json'}]"


RECORD = """
import sys
sys.path.insert(0, 'tests')
from stack.figures import Figures
for i in range(40):
    Figures.record('parallel', f'{sys.argv[1]}-{i}', i)
"""


def test_processes_recording_side_by_side_lose_no_figure(tmp_path: Path) -> None:
    """pytest-xdist runs the unit suite in several processes that record into one file."""
    env = {**os.environ, "AVD_FIGURES": str(tmp_path / "figures.json")}
    procs = [subprocess.Popen([sys.executable, "-c", RECORD, f"w{n}"], cwd=ROOT, env=env) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    import json

    recorded = json.loads((tmp_path / "figures.json").read_text())["parallel"]
    assert len(recorded) == 4 * 40


def test_make_check_records_its_figures_outside_the_checkout() -> None:
    """``make check`` hands its sub-make an empty ``AVD_FIGURES``: the ``?=`` of the Makefile keeps it
    (a variable from the environment is defined, even empty), so the figures go to the temporary file."""
    assert make_sees(AVD_FIGURES="") == "[]"
    recipe = (ROOT / "Makefile").read_text().split("\ncheck: $(STAMP)\n", 1)[1].splitlines()[0]
    assert recipe.startswith("\t@AVD_FIGURES= $(MAKE) "), recipe
