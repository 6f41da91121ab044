"""The emulator's web pages (routed by rest/web.py): a job's page, a replica's web access page and the
index of every job (``views``), a tuning job's trial chart (``chart``), from Jinja2 templates under
``templates/`` with a little inline CSS and no external asset, autoescaped (``render``): every value is
escaped.
"""

from __future__ import annotations

from vertex_emulator.pages.chart import trial_chart
from vertex_emulator.pages.views import (
    ENDED_STATES,
    REFRESH_S,
    index_page,
    job_kind,
    job_page,
    output_directory,
    replica_keys,
    replica_page,
)

__all__ = [
    "ENDED_STATES",
    "REFRESH_S",
    "index_page",
    "job_kind",
    "job_page",
    "output_directory",
    "replica_keys",
    "replica_page",
    "trial_chart",
]
