"""The part both page writers share: a generated block lives in a markdown page between a start and an
end marker, and a writer replaces only what lies between them (``scripts/spec_fields_md.py``,
``scripts/outputs_md.py``, ``scripts/emulator_bounds_md.py``, ``scripts/layers_picture.py``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["replace_marked"]


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
