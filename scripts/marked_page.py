"""The part the page writers share (``scripts/spec_fields_md.py``, ``scripts/outputs_md.py``,
``scripts/emulator_bounds_md.py``, ``scripts/layers_picture.py``): a generated block lives in a markdown
page between a start and an end marker, and a writer replaces only what lies between them
(``replace_marked``), from a command line that writes it or, with ``--check``, fails when it is stale
(``write_or_check``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

__all__ = ["replace_marked", "write_or_check"]


def replace_marked(page: str, start: str, end: str, block: str, where: Path) -> str:
    """``page`` with the text from ``start`` through ``end`` replaced by ``block`` (which carries both
    markers); a ``ValueError`` naming ``where`` when a marker is missing."""
    head, sep, rest = page.partition(start)
    if not sep:
        raise ValueError(f"{where}: no {start!r} marker")
    _, sep, tail = rest.partition(end)
    if not sep:
        raise ValueError(f"{where}: no {end!r} marker")
    return head + block + tail


def write_or_check(
    argv: list[str] | None, page: Path, updated: Callable[[str], str], what: str, run: str
) -> int:
    """A page writer's command line: rewrite ``page``'s generated block, or with ``--check`` only say
    (``<page>: the <what> is stale: run <run>``) and exit 1 when it differs from what would be written."""
    parser = argparse.ArgumentParser(description=f"Write the {what} into {page.name}")
    parser.add_argument("--check", action="store_true", help=f"fail when the {what} is stale")
    args = parser.parse_args(argv)
    text = page.read_text(encoding="utf-8")
    fresh = updated(text)
    if args.check:
        if fresh != text:
            print(f"{page.relative_to(page.parents[1])}: the {what} is stale: run {run}")
            return 1
        return 0
    page.write_text(fresh, encoding="utf-8")
    return 0
