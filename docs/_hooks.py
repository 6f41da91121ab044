"""MkDocs hooks of this site (configured under ``hooks:`` in ``mkdocs.yml``).

- ``on_config``: the pages run their examples at build time (markdown-exec), some of which import
  Airflow; give them a throw-away ``AIRFLOW_HOME`` (unless one is set) so a docs build never writes
  an Airflow configuration into the user's home, and removes it after the build.
- ``on_config`` also drops one known, harmless docstring warning: the sensors document
  ``job_name``, which their base class takes through ``**kwargs``, so griffe finds no such
  parameter in their own signatures. Every other docstring warning still fails a strict build.

The code's docstrings name code with Markdown code spans (double backticks), which mkdocstrings renders
as they are: no Sphinx roles, so nothing here rewrites the rendered pages (scripts/docstring_roles.py,
run by make lint).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from typing import Any

_made_home: list[str] = []
#: (file, parameter) of documented parameters that a base class's __init__ takes via **kwargs
_KWARGS_PARAMS = {("airflow_vertex_dist/sensors/jobs.py", "job_name")}


class _KwargsParamFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        return not any(f"{path}:" in text and f"'{name}'" in text for path, name in _KWARGS_PARAMS)


def on_config(config: Any, **kwargs: Any) -> Any:
    if "AIRFLOW_HOME" not in os.environ:
        home = tempfile.mkdtemp(prefix="docs-airflow-home-")
        _made_home.append(home)
        os.environ["AIRFLOW_HOME"] = home
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    griffe_log = logging.getLogger("mkdocs.plugins.griffe")
    if not any(isinstance(f, _KwargsParamFilter) for f in griffe_log.filters):
        griffe_log.addFilter(_KwargsParamFilter())
    return config


def on_post_build(**kwargs: Any) -> None:
    while _made_home:
        shutil.rmtree(_made_home.pop(), ignore_errors=True)
