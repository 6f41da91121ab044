"""The machine catalog of Vertex AI custom training, the name error messages and docs give it:
``airflow_vertex_dist._generated.catalog``, which ``scripts/catalog_gen.py`` writes from
``catalog/vertex_catalog.json`` (the source of every figure), re-exported whole. Pure data."""

from __future__ import annotations

from airflow_vertex_dist._generated.catalog import *  # noqa: F403 (every name of its __all__)
from airflow_vertex_dist._generated.catalog import __all__ as __all__
