"""Test-wide settings, set before Airflow or the specs load: an isolated AIRFLOW_HOME, no example DAGs,
and a spec schema cache of the session's own, written first by another process so that every test
here validates specs with schemas read from the cache, as a DAG processor's parses do."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_session = tempfile.mkdtemp(prefix="avd-tests-")
atexit.register(shutil.rmtree, _session, ignore_errors=True)
_home = os.path.join(_session, "airflow-home")
os.makedirs(_home)
# A pytest-xdist worker inherits the environment of the process that started it, which ran this file
# too: each worker takes a home (metadata DB) and schema cache of its own instead of sharing that
# process's. A home the caller set before pytest started is kept, as in a plain run.
_inherited = os.environ.get("AVD_TESTS_SESSION")
for _var, _value in (
    ("AIRFLOW_HOME", _home),
    ("AIRFLOW_VERTEX_DIST_SCHEMA_CACHE", os.path.join(_session, "spec-schema-cache")),
):
    if _inherited is not None and os.environ.get(_var, "").startswith(_inherited):
        os.environ[_var] = _value
    else:
        os.environ.setdefault(_var, _value)
os.environ["AVD_TESTS_SESSION"] = _session
subprocess.run(
    [sys.executable, "-m", "airflow_vertex_dist.cli", "warm-schema-cache"],
    cwd=Path(__file__).resolve().parents[1],
    check=True,
    stdout=subprocess.DEVNULL,
)
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")

# Property tests and fuzzers run the same examples on every run (a CI result must not depend on a
# random draw); HYPOTHESIS_PROFILE=explore draws new ones when hunting for bugs locally.
from hypothesis import settings  # noqa: E402

settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
