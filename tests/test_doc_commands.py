"""The commands the docs give a user to type are the ones that work for what the docs promise: a pool
for ``gpu_pool`` counts deferred tasks. Read from every page a user reads (README.md,
emulator/README.md, docs/, the example DAGs)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pages() -> dict[str, str]:
    """Every page, by its path from the repository's root, its line breaks folded to spaces (a command
    in a docstring may wrap)."""
    paths = [ROOT / "README.md", ROOT / "emulator" / "README.md"]
    paths += sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "dags").rglob("*.py"))
    return {str(p.relative_to(ROOT)): re.sub(r"\s*\n\s*", " ", p.read_text(encoding="utf-8")) for p in paths}


def test_every_pool_the_docs_create_counts_deferred_tasks() -> None:
    """``gpu_pool`` tasks defer (``deferrable=True``): a pool created without ``include_deferred``
    admits new tasks while the deferred ones' jobs hold their GPUs."""
    commands = [
        (name, found.group(0))
        for name, text in _pages().items()
        for found in re.finditer(r"airflow pools set [^`]*", text)
    ]
    assert commands, "no page creates a pool any more: drop this test"
    assert [c for c in commands if "--include-deferred" not in c[1]] == []
    for name, text in _pages().items():
        for found in re.finditer(r"POST /api/v2/pools", text):
            assert "include_deferred" in text[found.start() - 80 : found.end() + 80], name

