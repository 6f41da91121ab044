"""The session's real Airflow stack (started once, torn down at the end with a no-leftover check)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .celery_stack import CeleryStack
from .figures import Figures
from .stack import AirflowStack

DAGS = Path(__file__).parent / "dags"
CANARY_VAR = "AIRFLOW_VAR_AVD_API_SECRET"
#: the canary secret: in the connection's key JSON and (through a Variable) in a job's env
CANARY = "avd-canary-7f3e9b1c5d2a"


@pytest.fixture(scope="session")
def stack(request: pytest.FixtureRequest) -> Iterator[AirflowStack]:
    key_json = '{"type": "service_account", "private_key": "' + CANARY + '-key", "client_email": "x@y.z"}'
    st = AirflowStack(
        DAGS, extra_env={CANARY_VAR: CANARY}, parallelism=8, conn_extra={"keyfile_dict": key_json}
    )
    st.start()
    Figures.record("stack", "start_s", round(st.timings["start_s"], 1))
    try:
        yield st
    finally:
        left = st.stop()
        Figures.record("stack", "leftover_processes", len(left))
        if request.session.testsfailed:  # keep the logs of a failed run
            print(f"\nstack logs kept in {st.root}")
        else:
            st.cleanup()
        assert left == [], f"processes left after teardown: {left}"


@pytest.fixture(scope="session")
def celery_stack(request: pytest.FixtureRequest) -> Iterator[CeleryStack]:
    """The Celery profile (tests/stack/celery_stack.py). Run its tests in a pytest process of their
    own (``make stack-celery``, which ``make test`` runs beside ``make stack-local``): one session
    that also used ``stack`` would keep both session-scoped stacks up for the whole of its run."""
    st = CeleryStack(DAGS, parallelism=8)
    st.start()
    Figures.record("celery", "start_s", round(st.timings["start_s"], 1))
    try:
        yield st
    finally:
        left = st.stop()
        Figures.record("celery", "leftover_processes", len(left))
        if request.session.testsfailed:  # keep the logs of a failed run
            print(f"\ncelery stack logs kept in {st.root}")
        else:
            st.cleanup()
        assert left == [], f"processes left after teardown: {left}"
