"""The commands the docs give a user to type are the ones that work for what the docs promise: a pool
for ``gpu_pool`` counts deferred tasks, and the emulator is installed with the extra its tuning trials
need. Read from every page a user reads (README.md, emulator/README.md, docs/, the example DAGs)."""

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


def test_every_emulator_install_has_the_hypertune_extra() -> None:
    """Tuning trials report their metric through ``cloudml-hypertune`` (the emulator's ``hypertune``
    extra): an install without it runs training jobs, and trials that fail to import it."""
    installs = [
        (name, found.group(0))
        for name, text in _pages().items()
        for found in re.finditer(r"pip install [^#`]*?(?:vertex-emulator|\./emulator)\S*", text)
    ]
    assert len(installs) >= 3, installs
    assert [i for i in installs if "[hypertune" not in i[1]] == []
