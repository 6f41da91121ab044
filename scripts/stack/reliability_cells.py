"""The table cells of ``docs/reliability.md``: a figure as a cell, and text shown as written."""

from __future__ import annotations

from typing import Any

__all__ = ["cell", "escape"]


def escape(text: Any) -> str:
    """A table cell showing ``text`` as written: Markdown's special characters escaped, one line."""
    out = str(text).replace("\n", " ")
    for char in "\\`*_[]<>|":
        out = out.replace(char, "\\" + char)
    return out


def cell(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return "–" if value is None else str(value)
