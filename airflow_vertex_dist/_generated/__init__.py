"""Code generated from data: do not edit by hand. ``catalog`` is the machine catalog, which
``scripts/catalog_gen.py`` writes from ``catalog/vertex_catalog.json``; ``tests/test_catalog.py`` fails
when it differs from what the generator writes now."""

from __future__ import annotations

__all__: list[str] = []
