"""Fixtures of the end-to-end tests: the example DAG files run with ``dag.test()`` on a migrated SQLite
metadata DB against an in-process emulator that maps the example images to the real trainers."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from operators.harness import CONN_ENV, connection_env, migrate_db

from vertex_emulator import testing
from vertex_emulator.app import Emulator

DAGS = Path(__file__).resolve().parents[2] / "dags"


@pytest.fixture(scope="session")
def airflow_db() -> None:
    migrate_db()


def _fresh_common() -> Any:
    """Import ``examples_common`` again, so it reads this test's environment."""
    sys.modules.pop("examples_common", None)
    import examples_common

    return examples_common


@pytest.fixture
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, airflow_db: None) -> Iterator[Emulator]:
    """An emulator running the example images; the connection, gs:// mount and poll interval set."""
    monkeypatch.syspath_prepend(str(DAGS))
    monkeypatch.setenv("VERTEX_DIST_EXAMPLES_POLL_INTERVAL", "0.5")
    monkeypatch.setenv("GCS_MOUNT_ROOT", str(tmp_path / "gcs"))
    common = _fresh_common()
    with testing.running_emulator(tmp_path, image_map=common.emulator_image_map()) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        yield em
    sys.modules.pop("examples_common", None)


@pytest.fixture
def load_dags() -> Callable[[str], dict[str, Any]]:
    """Import a DAG file of ``dags/`` afresh (a module of its own); its DAGs by dag_id."""
    from airflow.sdk import DAG

    def load(filename: str) -> dict[str, Any]:
        path = DAGS / filename
        name = f"e2e_dag_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        finally:
            sys.modules.pop(name, None)
        return {v.dag_id: v for v in vars(module).values() if isinstance(v, DAG)}

    return load
