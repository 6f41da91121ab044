"""A rehearsal in a user's own tests: ``pytest_plugins = ["airflow_vertex_dist.rehearse.testing"]`` in a
``conftest.py`` gives the ``vertex_rehearsal`` fixture, which runs ``rehearse`` in the test's temporary
directory and returns its ``Rehearsal`` (the report as a dict, and where its files are)::

    def test_the_ladder_survives_a_stockout(vertex_rehearsal):
        done = vertex_rehearsal("dags/nightly.py", "scenarios/stockout.yaml", dates=[datetime(2026, 1, 5)])
        assert done.ok
        assert [t["rung"] for t in done.report["runs"][0]["rungs_tried"]] == ["a100", "l4"]

Keyword arguments are ``RehearsalPlan``'s (``dates``, ``start``/``end``, ``parallel``, ``emulator_args``,
``env``, ``buckets``, ``conn_id``, ``timeout_s``, ``dag_id``, ``db_cache``). The rehearsals of one test
session share a ``db_cache``, the ``vertex_rehearsal_db_cache`` fixture's folder (a temporary one: the
first rehearsal migrates Airflow's metadata DB, the others copy it); override that fixture to keep it
across sessions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_vertex_dist.rehearse.runs import Rehearsal, RehearsalPlan, rehearse

__all__ = ["vertex_rehearsal", "vertex_rehearsal_db_cache"]


@pytest.fixture(scope="session")
def vertex_rehearsal_db_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the session's rehearsals keep the migrated metadata DB in (``RehearsalPlan.db_cache``)."""
    return tmp_path_factory.mktemp("vertex-rehearsal-db-cache")


@pytest.fixture
def vertex_rehearsal(tmp_path: Path, vertex_rehearsal_db_cache: Path) -> Callable[..., Rehearsal]:
    """``run(dag_file, scenario, **plan) -> Rehearsal``, each rehearsal in a folder of ``tmp_path``."""
    count = [0]

    def run(dag_file: str | Path, scenario: str | Path, **plan: Any) -> Rehearsal:
        count[0] += 1
        workdir = tmp_path / f"rehearsal-{count[0]}"
        plan.setdefault("db_cache", vertex_rehearsal_db_cache)
        return rehearse(
            RehearsalPlan(
                dag_file=Path(dag_file).resolve(), scenario=Path(scenario).resolve(), workdir=workdir, **plan
            )
        )

    return run
