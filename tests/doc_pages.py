"""The page reader of the doc-claim tests (`test_doc_claims.py`, `test_doc_claims_names.py`)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

__all__ = ["DOCS", "ROOT", "claim", "default_of", "page"]

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def page(name: str) -> str:
    """The page's text with its line breaks folded to spaces (sentences wrap anywhere)."""
    path = ROOT / name if name == "README.md" else DOCS / name
    return re.sub(r"\s*\n\s*", " ", path.read_text(encoding="utf-8"))


def claim(text: str, pattern: str) -> re.Match[str]:
    """The match of ``pattern`` in a page's text; fails when the page no longer says it."""
    found = re.search(pattern, text)
    assert found is not None, f"the page no longer says {pattern!r}"
    return found


def default_of(func: Any, name: str) -> Any:
    return inspect.signature(func).parameters[name].default
