"""hooks.

The names of the ``vertex_dist`` connection type live here, so that an operator or sensor can name its
default connection without importing a hook (``airflow_vertex_dist.hooks.connection`` re-exports
them).
"""

from __future__ import annotations

__all__ = ["CONN_TYPE", "DEFAULT_CONN_ID", "HOOK_NAME"]

CONN_TYPE = "vertex_dist"
DEFAULT_CONN_ID = "vertex_dist_default"
HOOK_NAME = "Vertex AI distributed training"
