"""The complexity budget: no function above ruff's C901 limit unless the allow-list names it, and the
allow-list only shrinks.

``make lint`` (and so ``make check`` and ``make test``) runs this. It asks ruff for every function whose
McCabe complexity is above ``[tool.ruff.lint.mccabe] max-complexity`` (pyproject.toml) and compares
them with ``scripts/complexity_allow.txt`` (``path::function complexity``, one a line). It fails on:

- a function above the limit that the list does not name (split it; the list never grows);
- a listed function whose complexity grew past its recorded number;
- a listed function that is no longer above the limit, or no longer exists (take its line out, so the
  list shrinks as functions are split).

``--write`` rewrites the list from what ruff finds now, which is how a line is taken out; it refuses to
add a function that the list does not already name.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Budget", "check", "main", "measure"]

ROOT = Path(__file__).resolve().parents[1]
ALLOW = ROOT / "scripts" / "complexity_allow.txt"
MESSAGE = re.compile(r"^`(?P<name>[^`]+)` is too complex \((?P<n>\d+) > (?P<limit>\d+)\)$")

#: path::function -> complexity
Budget = dict[str, int]


def _ruff() -> str:
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.exists() else "ruff"


def measure(root: Path) -> Budget:
    """Every function of the tree at ``root`` above the configured limit, with its complexity (a
    name that occurs more than once in a file is keyed ``name#2``, ``name#3`` in line order)."""
    out = subprocess.run(
        [_ruff(), "check", "--select", "C901", "--output-format", "json", "--exit-zero", "."],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    found: Budget = {}
    rows = sorted(json.loads(out.stdout), key=lambda r: (r["filename"], r["location"]["row"]))
    for row in rows:
        match = MESSAGE.match(row["message"])
        if match is None:
            raise SystemExit(f"complexity budget: unexpected ruff message {row['message']!r}")
        path = Path(row["filename"]).resolve().relative_to(root.resolve()).as_posix()
        key, seen = f"{path}::{match['name']}", 1
        while key in found:
            seen += 1
            key = f"{path}::{match['name']}#{seen}"
        found[key] = int(match["n"])
    return found


def read_allow(path: Path) -> Budget:
    allowed: Budget = {}
    for number, line in enumerate(path.read_text().splitlines(), 1) if path.exists() else ():
        text = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not text:
            continue
        key, _, value = text.rpartition(" ")
        if not key or not value.isdigit():
            raise SystemExit(f"{path.name}:{number}: expected 'path::function complexity', got {line!r}")
        allowed[key.strip()] = int(value)
    return allowed


def check(found: Budget, allowed: Budget) -> list[str]:
    """What breaks the budget, one sentence each (empty when it holds)."""
    problems = []
    for key, n in sorted(found.items()):
        if key not in allowed:
            problems.append(f"{key} has complexity {n}, above the limit: split it (the list only shrinks)")
        elif n > allowed[key]:
            problems.append(f"{key} grew from complexity {allowed[key]} to {n}: split it, keep its line")
    for key in sorted(set(allowed) - set(found)):
        problems.append(f"{key} is within the limit now (or gone): take its line out of {ALLOW.name}")
    return problems


def _write(path: Path, found: Budget, allowed: Budget) -> int:
    new = sorted(set(found) - set(allowed))
    if new:
        print("complexity budget: --write does not add functions: " + ", ".join(new), file=sys.stderr)
        return 1
    header = [line for line in path.read_text().splitlines() if line.startswith("#")] if path.exists() else []
    body = [f"{key} {min(n, allowed[key])}" for key, n in sorted(found.items())]
    path.write_text("\n".join(header + body) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--allow", type=Path, default=ALLOW)
    parser.add_argument("--write", action="store_true", help="take out the lines of functions now in budget")
    args = parser.parse_args(argv)
    found, allowed = measure(args.root), read_allow(args.allow)
    if args.write:
        return _write(args.allow, found, allowed)
    problems = check(found, allowed)
    for problem in problems:
        print(f"complexity budget: {problem}", file=sys.stderr)
    if not problems:
        print(f"complexity budget: kept ({len(allowed)} functions on the allow-list)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
