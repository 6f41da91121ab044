"""``make compat`` (scripts/compat_cells.py): every cell of the matrix run, at most ``--jobs`` at once,
each cell's log printed whole, and a failed cell fails the run by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "compat"))

from matrix import CELLS  # noqa: E402

FAKE_NOX = """#!{python}
import os, sys, time
cell = sys.argv[sys.argv.index("-s") + 1][len("compat("):-1]
with open(os.path.join({marks!r}, cell), "w"):
    pass
running = len(os.listdir({marks!r})) - len(os.listdir({done!r}))
print(f"cell {{cell}} line one\\nrunning {{running}}")
time.sleep(0.3)
open(os.path.join({done!r}, cell), "w").close()
sys.exit(3 if cell == {failing!r} else 0)
"""


def _run(tmp_path: Path, jobs: int, failing: str = "") -> subprocess.CompletedProcess[str]:
    marks, done = tmp_path / "marks", tmp_path / "done"
    marks.mkdir()
    done.mkdir()
    nox = tmp_path / "nox"
    nox.write_text(FAKE_NOX.format(python=sys.executable, marks=str(marks), done=str(done), failing=failing))
    nox.chmod(0o755)
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "compat_cells.py"), "--jobs", str(jobs), "--nox", str(nox)],
        capture_output=True, text=True, timeout=120, check=False, env=dict(os.environ),
    )  # fmt: skip


def test_every_cell_runs_and_each_log_is_printed_whole(tmp_path: Path) -> None:
    result = _run(tmp_path, jobs=2)
    assert result.returncode == 0, result.stderr
    for cell in CELLS:
        head = f"===== compat({cell.name}): passed"
        assert head in result.stdout
        assert result.stdout.split(head, 1)[1].splitlines()[1] == f"cell {cell.name} line one"
    assert sorted(p.name for p in (tmp_path / "marks").iterdir()) == sorted(c.name for c in CELLS)
    concurrency = [int(line.split()[1]) for line in result.stdout.splitlines() if line.startswith("running ")]
    assert max(concurrency) <= 2


def test_a_failed_cell_fails_the_run_by_name(tmp_path: Path) -> None:
    result = _run(tmp_path, jobs=1, failing=CELLS[1].name)
    assert result.returncode == 1
    assert f"compat cells failed (all): {CELLS[1].name}" in result.stderr
    assert f"===== compat({CELLS[1].name}): FAILED (exit 3)" in result.stdout


NOXFILE = """
import nox

MARK = "import sys; open({log!r}, 'a').write(' '.join(sys.argv[1:]) + chr(10))"


@nox.session(venv_backend="uv")
@nox.parametrize("cell", {cells!r}, ids={cells!r})
def compat(session, cell):
    session.run_install("python", "-c", MARK, "install", cell)  # the install step
    session.run("python", "-c", MARK, "test", cell)  # the suite
"""


def test_the_install_phase_installs_only_and_the_test_phase_reuses_it(tmp_path: Path) -> None:
    """``make test`` installs the cells in its first stage and tests them in its second: the real nox,
    on a noxfile whose install and run steps each write a line."""
    log = tmp_path / "steps.log"
    log.touch()
    cells = [cell.name for cell in CELLS]
    noxfile = tmp_path / "noxfile.py"
    noxfile.write_text(NOXFILE.format(cells=cells, log=str(log)))
    nox = Path(sys.executable).with_name("nox")

    def phase(name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "compat_cells.py"), "--phase", name, "--nox", str(nox),
             "-f", str(noxfile), "--envdir", str(tmp_path / "envs")],
            capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ),
        )  # fmt: skip

    installed = phase("install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert f"compat cells passed (install): {', '.join(cells)}" in installed.stdout
    assert sorted(log.read_text().splitlines()) == sorted(f"install {c}" for c in cells)  # no suite ran
    tested = phase("test")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert f"===== compat({cells[0]}) test: passed" in tested.stdout
    steps = log.read_text().splitlines()
    assert sorted(steps) == sorted(
        [f"install {c}" for c in cells] + [f"test {c}" for c in cells]
    )  # once each
