"""Every module of the provider and of the emulator's distribution imports on this cell's Airflow,
Python and dependencies."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil

import pytest

import airflow_vertex_dist
import vertex_emulator

MODULES = sorted(
    info.name
    for package in (airflow_vertex_dist, vertex_emulator)
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.")
    if not info.name.endswith(".__main__")  # ``python -m vertex_emulator``: importing it runs the emulator
)


def test_the_walk_finds_the_package() -> None:
    assert {"airflow_vertex_dist.operators.training", "vertex_emulator.app"} <= set(MODULES)


#: modules that need an optional package (module -> the package): the package's own code calls them
#: only when that package is there (the OpenLineage provider calls the operators' lineage methods).
OPTIONAL = {"airflow_vertex_dist.operators.lineage": "airflow.providers.openlineage"}


@pytest.mark.parametrize("name", MODULES)
def test_module_imports(name: str) -> None:
    needs = OPTIONAL.get(name)
    if needs is not None and importlib.util.find_spec(needs) is None:
        with pytest.raises(ModuleNotFoundError, match=needs):  # and nothing else is missing
            importlib.import_module(name)
        return
    importlib.import_module(name)
