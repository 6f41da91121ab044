"""Run the support matrix's compat cells (``tests/compat/matrix.py``), several at a time.

``make compat`` runs this: one ``nox -s "compat(<cell>)"`` process per cell, at most ``--jobs`` at
once (``COMPAT_JOBS``, 2 by default: a cell spends most of its time installing and waiting on replica
processes and servers, so two share a 2-core machine well). Each cell's output goes to a log of its
own, printed whole when the cell ends, so the output of two cells never interleaves. Exits non-zero
when any cell failed, naming them. Extra arguments are passed to every nox call.

``--phase install`` only makes each cell's virtualenv (nox ``--install-only``); ``--phase test`` then runs
the suite in it without installing again (nox ``-R``; a cell with no virtualenv yet is installed first).
``make test`` installs the cells while the unit suite runs (an install mostly waits on downloads and
disk, the unit suite on the cores) and tests them in its second stage; ``--phase all``, the default,
does both in one nox call.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_matrix() -> ModuleType:
    """The support matrix, ``tests/compat/matrix.py``, loaded from its file (``tests`` is no package
    a script imports)."""
    spec = importlib.util.spec_from_file_location("avd_matrix", ROOT / "tests" / "compat" / "matrix.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["avd_matrix"] = module  # dataclasses look their module up while building the class
    spec.loader.exec_module(module)
    return module


def _cells() -> list[str]:
    return [cell.name for cell in load_matrix().CELLS]


#: nox's options for each phase: a fresh virtualenv and the suite; the install alone; the suite alone
PHASES = {
    "all": ["--reuse-venv=no"],
    "install": ["--reuse-venv=no", "--install-only"],
    "test": ["-R"],
}


def _run(nox: str, phase: str, cell: str, extra: list[str], logs: Path) -> tuple[str, int, float, Path]:
    log = logs / f"{cell}.log"
    started = time.monotonic()
    with open(log, "w") as out:
        rc = subprocess.call(
            [nox, *PHASES[phase], "-s", f"compat({cell})", *extra],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    return cell, rc, time.monotonic() - started, log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2, help="cells run at once (default: %(default)s)")
    parser.add_argument("--nox", default=str(Path(sys.executable).with_name("nox")), help="the nox to run")
    parser.add_argument("--cells", default="", help="comma-separated cells (default: every one)")
    parser.add_argument("--phase", choices=sorted(PHASES), default="all", help="default: %(default)s")
    args, extra = parser.parse_known_args(argv)
    if args.jobs < 1:
        parser.error("--jobs: at least 1")
    cells = [c for c in args.cells.split(",") if c] or _cells()
    unknown = set(cells) - set(_cells())
    if unknown:
        parser.error(f"--cells: unknown cell(s) {', '.join(sorted(unknown))}")
    failed: list[str] = []
    what = "" if args.phase == "all" else f" {args.phase}"
    with tempfile.TemporaryDirectory(prefix="avd-compat-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(_run, args.nox, args.phase, cell, extra, Path(tmp)) for cell in cells]
        for future in futures:
            cell, rc, seconds, log = future.result()
            verdict = "passed" if rc == 0 else f"FAILED (exit {rc})"
            print(f"===== compat({cell}){what}: {verdict} in {seconds:.0f} s")
            print(log.read_text(errors="replace"), flush=True)
            if rc != 0:
                failed.append(cell)
    if failed:
        print(f"compat cells failed ({args.phase}): {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"compat cells passed ({args.phase}): {', '.join(cells)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
