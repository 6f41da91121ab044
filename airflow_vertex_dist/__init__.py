"""Apache Airflow provider for distributed training on Google Vertex AI.

Importing the package root is cheap: it loads no ``google.cloud`` module and no Airflow
module. Specs live in ``airflow_vertex_dist.specs``, operators in
``airflow_vertex_dist.operators``, sensors in ``airflow_vertex_dist.sensors``.
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # ``__version__`` is read from the installed distribution's metadata (one source: pyproject.toml),
    # on first access only, so importing the package root stays free.
    if name == "__version__":
        from airflow_vertex_dist.common.version import package_version

        return package_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
