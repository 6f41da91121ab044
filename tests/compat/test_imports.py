"""Every module of the provider and of the emulator's distribution imports on this cell's Airflow,
Python and dependencies."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil

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


def _import_problem(name: str) -> str | None:
    """Why ``name`` does not import as it should here, or ``None``."""
    needs = OPTIONAL.get(name)
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if needs is not None and importlib.util.find_spec(needs) is None and needs in str(exc):
            return None  # the optional package is missing, and nothing else
        return f"{name}: {exc!r}"
    except Exception as exc:  # noqa: BLE001 - every module's failure is reported, not the first
        return f"{name}: {exc!r}"
    if needs is not None and importlib.util.find_spec(needs) is None:
        return f"{name}: imported although {needs} is missing here (it needs it)"
    return None


def test_every_module_imports() -> None:
    """One test per cell: every module is imported and every failure named (it was one test item per
    module, 158 items that counted as many tests)."""
    problems = [problem for name in MODULES if (problem := _import_problem(name)) is not None]
    assert not problems, "\n".join(problems)
