"""Write the machine catalog (``catalog/vertex_catalog.json``, the one source) into the two Python modules
that check requests against it, one in the ``_generated`` package of each distribution:
``airflow_vertex_dist/_generated/catalog.py`` (the provider's specs read it; ``specs/catalog.py``
re-exports it) and ``emulator/vertex_emulator/_generated/catalog.py`` (the emulator's own copy: the
emulator imports nothing of the provider). Both are Python literals, so importing them reads no file (a
DAG parse imports the specs). ``tests/test_catalog.py`` fails when either copy differs from what this
writes, or when the source breaks one of the rules of ``problems``.

Its parts, beside it in ``scripts/``: ``catalog_page.py`` (the TPU VM machine types and topologies,
derived from the stored tables of Google's page, ``catalog/configure_compute_page.json``),
``catalog_machines.py`` (the machine types of each series),
``catalog_rules.py`` and ``catalog_prices.py`` (the rules the data keeps), ``catalog_render.py`` (the
text of the generated module).

Run from the checkout's root: ``python scripts/catalog_gen.py`` (``--check`` only reports stale copies).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# scripts/ is on the path: run as a script, or by the tests
from catalog_machines import machine_table
from catalog_page import derive, load_page, merge
from catalog_render import render
from catalog_rules import problems

__all__ = ["OUTPUTS", "SOURCE", "load", "machine_table", "main", "problems", "render"]

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "catalog" / "vertex_catalog.json"
OUTPUTS = (
    ROOT / "airflow_vertex_dist" / "_generated" / "catalog.py",
    ROOT / "emulator" / "vertex_emulator" / "_generated" / "catalog.py",
)


def load(path: Path = SOURCE) -> dict[str, Any]:
    """The hand-kept catalog with the TPU VM machine types and topologies derived from the stored page
    (``catalog/configure_compute_page.json``, ``scripts/catalog_page.py``) merged in."""
    data: dict[str, Any] = json.loads(path.read_text())
    return merge(data, derive(load_page()))


def main(argv: list[str]) -> int:
    data = load()
    found = problems(data)
    if found:
        print("catalog/vertex_catalog.json:\n  " + "\n  ".join(found), file=sys.stderr)
        return 1
    text = render(data)
    stale = [path for path in OUTPUTS if not path.exists() or path.read_text() != text]
    if "--check" in argv:
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)} (run: python scripts/catalog_gen.py)", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
