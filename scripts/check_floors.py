"""Check that the declared floors resolve together with each supported Airflow release, as of its date.

For every Airflow release of the support matrix (``tests/compat/matrix.py``), resolve both
distributions (the provider, and the emulator with its ``hypertune`` extra) with that release pinned,
as the package index stood on the cell's date (uv's ``--exclude-newer``) and with uv's
``--resolution lowest-direct`` (every direct dependency as low as the whole allows), on the cell's
Python. It fails when a resolution fails, or when a direct dependency resolves above the floor a
``pyproject.toml`` declares although only our own distributions ask for it: then that floor cannot be
installed with that release and the declared range promises what it cannot keep. A dependency that
another package lifts above our floor (Airflow asks for a newer PyYAML, say) is listed, not failed.

The compat matrix installs only one cell at the floors (``lowest``, with Airflow's own floor); this
resolves the floors beside each release without installing anything. It needs the package index, as
the cells' installs do, so ``make test`` runs it in its first stage beside those installs, not as a
test (the tests use no network but loopback). ``make floors`` runs it alone.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from compat_cells import load_matrix  # scripts/, first on the path when a script runs
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # the dev venv's Python is 3.11; tomllib is in the standard library from 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
#: our distributions, as uv names them in its ``# via`` annotations
OURS = frozenset({"airflow-vertex-dist", "vertex-emulator"})
#: what is resolved: both distributions as the compat cells install them (less the test group)
INPUT = "-e {root}\n-e {root}/emulator[hypertune]\napache-airflow=={airflow}\n"


@dataclass(frozen=True)
class Release:
    airflow: str
    python: str
    date: str


def releases() -> list[Release]:
    """One per Airflow release of the matrix's dated cells (its oldest Python, the cell's date)."""
    found: dict[str, Release] = {}
    for cell in load_matrix().CELLS:
        if cell.exclude_newer and cell.airflow not in found:
            found[cell.airflow] = Release(cell.airflow, cell.python, cell.exclude_newer)
    return sorted(found.values(), key=lambda r: Version(r.airflow))


def floors() -> dict[str, Version]:
    """Each direct dependency's declared floor (``>=``) in both ``pyproject.toml`` files (the emulator's
    ``hypertune`` extra included); Airflow itself is pinned per release, so it is left out."""
    out: dict[str, Version] = {}
    for path in (ROOT / "pyproject.toml", ROOT / "emulator" / "pyproject.toml"):
        project = tomllib.loads(path.read_text())["project"]
        lines = [*project["dependencies"], *project.get("optional-dependencies", {}).get("hypertune", [])]
        for line in lines:
            req = Requirement(line)
            name = canonicalize_name(req.name)
            for spec in req.specifier:
                if spec.operator == ">=" and name != "apache-airflow":
                    out[name] = max(out.get(name, Version(spec.version)), Version(spec.version))
    return out


_PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==(\S+)$")
_VIA = re.compile(r"^\s+#\s+(?:via\s+)?([A-Za-z0-9_.\-]+)\s*$")


def resolved(text: str) -> dict[str, tuple[Version, set[str]]]:
    """``uv pip compile``'s output: each package's version and the packages it is there for."""
    out: dict[str, tuple[Version, set[str]]] = {}
    current: str | None = None
    for line in text.splitlines():
        pin = _PIN.match(line)
        if pin:
            current = canonicalize_name(pin.group(1))
            out[current] = (Version(pin.group(2)), set())
            continue
        via = _VIA.match(line)
        if via and current is not None and via.group(1) != "via":
            out[current][1].add(canonicalize_name(via.group(1)))
    return out


def check(release: Release, uv: str, work: Path) -> tuple[list[str], list[str]]:
    """The problems (failing) and the floors lifted by another package (listed) for ``release``."""
    source = work / f"floors-{release.airflow}.in"
    source.write_text(INPUT.format(root=ROOT, airflow=release.airflow))
    argv = [
        uv, "pip", "compile", str(source), "--resolution", "lowest-direct", "--exclude-newer",
        release.date, "--python-version", release.python, "--quiet", "--no-header",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        return [f"the floors do not resolve with it: {done.stderr.strip()[-2000:]}"], []
    pins = resolved(done.stdout)
    problems, lifted = [], []
    for name, floor in sorted(floors().items()):
        if name not in pins:
            problems.append(f"{name}: declared but not in the resolution")
            continue
        version, via = pins[name]
        if version == floor:
            continue
        others = sorted(via - OURS)
        if others:
            lifted.append(f"{name} {floor} -> {version} (asked for by {', '.join(others)})")
        else:
            problems.append(f"{name}: resolves to {version}, not its floor {floor}, and only we ask for it")
    return problems, lifted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", default=str(Path(sys.executable).with_name("uv")))
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="avd-floors-") as tmp:
        for release in releases():
            problems, lifted = check(release, args.uv, Path(tmp))
            head = f"floors with Airflow {release.airflow} (Python {release.python}, index of {release.date})"
            print(f"{head}: {'FAILED' if problems else 'resolve'}")
            for line in problems:
                print(f"  problem: {line}")
            for line in lifted:
                print(f"  lifted by another package: {line}")
            failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
