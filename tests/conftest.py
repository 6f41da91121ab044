"""Test-wide settings: an isolated AIRFLOW_HOME and no example DAGs, set before Airflow loads."""

from __future__ import annotations

import os
import tempfile

_home = tempfile.mkdtemp(prefix="avd-airflow-home-")
os.environ.setdefault("AIRFLOW_HOME", _home)
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")

# Property tests and fuzzers run the same examples on every run (a CI result must not depend on a
# random draw); HYPOTHESIS_PROFILE=explore draws new ones when hunting for bugs locally.
from hypothesis import settings  # noqa: E402

settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
