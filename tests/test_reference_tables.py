"""docs/reference/specs.md carries the spec models' field tables as written by
scripts/spec_fields_md.py: readable in the repository, and never behind the code."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "spec_fields_md.py"


def _script() -> object:
    spec = importlib.util.spec_from_file_location("spec_fields_md", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["spec_fields_md"] = module
    spec.loader.exec_module(module)
    return module


def test_the_committed_tables_are_what_the_script_writes() -> None:
    script = _script()
    page = script.PAGE.read_text()  # type: ignore[attr-defined]
    assert script.updated(page) == page, "run: python scripts/spec_fields_md.py"  # type: ignore[attr-defined]


def test_every_spec_model_field_is_in_a_table() -> None:
    from airflow_vertex_dist import specs
    from airflow_vertex_dist.specs._base import SpecModel

    page = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "specs.md").read_text()
    models = [
        name
        for name in specs.__all__
        if isinstance(getattr(specs, name), type) and issubclass(getattr(specs, name), SpecModel)
    ]
    for name in models:
        assert f"### `{name}`" in page, name
        for field in getattr(specs, name).model_fields:
            assert f"| `{field}` |" in page, f"{name}.{field}"
