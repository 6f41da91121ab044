"""Test-wide settings, set before Airflow loads: an isolated AIRFLOW_HOME and no example DAGs.

Also loads tests/collection_summary.py, which prints the run's test functions and parametrized cases apart.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# The line "test functions: N, parametrized cases: M (collected items: K)" before pytest's closing one.
pytest_plugins = ("tests.collection_summary", "airflow_vertex_dist.rehearse.testing")

_session = tempfile.mkdtemp(prefix="avd-tests-")
atexit.register(shutil.rmtree, _session, ignore_errors=True)
_home = os.path.join(_session, "airflow-home")
os.makedirs(_home)
# A pytest-xdist worker inherits the environment of the process that started it, which ran this file
# too: each worker takes a home (metadata DB) of its own instead of sharing that process's. A home the
# caller set before pytest started is kept, as in a plain run.
_inherited = os.environ.get("AVD_TESTS_SESSION")
if _inherited is not None and os.environ.get("AIRFLOW_HOME", "").startswith(_inherited):
    os.environ["AIRFLOW_HOME"] = _home
else:
    os.environ.setdefault("AIRFLOW_HOME", _home)
os.environ["AVD_TESTS_SESSION"] = _session
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")

# Property tests and fuzzers run the same examples on every run (a CI result must not depend on a
# random draw); HYPOTHESIS_PROFILE=explore draws new ones when hunting for bugs locally.
from hypothesis import HealthCheck, settings  # noqa: E402

# The examples are fixed, so the health check of how fast they are drawn only measures the machine's
# load (it failed one run with "too slow" on a loaded 2-core machine): off, and no deadline per example.
settings.register_profile(
    "deterministic",
    derandomize=True,
    database=None,
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
