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


def test_make_points_the_figures_at_the_committed_file() -> None:
    out = subprocess.run(
        ["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", "-", "show-figures"],
        cwd=ROOT,
        input="show-figures:\n\t@echo $$AVD_FIGURES\n",
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "AVD_FIGURES"},
    )
    assert Path(out.stdout.strip()) == ROOT / "scripts" / "stack" / "figures.json"
