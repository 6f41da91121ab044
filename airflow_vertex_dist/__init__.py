"""Apache Airflow provider for distributed training on Google Vertex AI.

Importing the package root is cheap: it loads no ``google.cloud`` module and no Airflow
module. Specs live in :mod:`airflow_vertex_dist.specs`, operators in
:mod:`airflow_vertex_dist.operators`, sensors in :mod:`airflow_vertex_dist.sensors`.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
