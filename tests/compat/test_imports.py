"""Every module of the package imports on this cell's Airflow, Python and dependencies."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import airflow_vertex_dist

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(airflow_vertex_dist.__path__, prefix="airflow_vertex_dist.")
)


def test_the_walk_finds_the_package() -> None:
    assert {"airflow_vertex_dist.operators.training", "airflow_vertex_dist.emulator.app"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_module_imports(name: str) -> None:
    importlib.import_module(name)
