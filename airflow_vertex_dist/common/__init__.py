"""The bottom layer: small, pure-standard-library definitions that several layers share (label rules,
Cloud Logging severities, lazily compiled regular expressions, the package version).

Every other layer may import from here; nothing here imports the rest of the package, Airflow or a
``google`` module, so the emulator and the DAG-parse path can load it for free.
"""

from __future__ import annotations

__all__: list[str] = []
