"""Test-wide settings: an isolated AIRFLOW_HOME and no example DAGs, set before Airflow loads."""

from __future__ import annotations

import os
import tempfile

_home = tempfile.mkdtemp(prefix="avd-airflow-home-")
os.environ.setdefault("AIRFLOW_HOME", _home)
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")
