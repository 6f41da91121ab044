"""The spec schema cache: written once, read by later processes, the same behaviour either way.

Each case runs fresh interpreters (a cache only shows across processes), each with its own cache
directory under ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_vertex_dist.specs._schema_cache import ENV_VAR

ROOT = Path(__file__).resolve().parents[2]

#: Probe prelude: records in ``generated`` each spec model whose core schema pydantic generates (a
#: cached one is not generated).
COUNT_GENERATED = """
from pydantic._internal import _generate_schema

generated = []
_model_schema = _generate_schema.GenerateSchema._model_schema
def counting(self, cls):
    if cls.__module__.startswith("airflow_vertex_dist.specs"):
        generated.append(cls.__qualname__)
    return _model_schema(self, cls)
_generate_schema.GenerateSchema._model_schema = counting
"""

#: Counts the core schemas pydantic generates for spec models (a cached one is not generated), then
#: validates every bad spec of the table and every example, and reports what came out.
PROBE = COUNT_GENERATED + """
import json, sys
from pydantic import ValidationError

from airflow_vertex_dist.specs import DistributedTrainingJob, HyperparameterTuningJob, error_lines
from airflow_vertex_dist.specs import _schema_cache, examples
from tests.specs.test_bad_specs import BAD

outcomes = {}
for name, data, _path, _rule in BAD:
    model = HyperparameterTuningJob if "study" in data else DistributedTrainingJob
    try:
        outcomes[name] = model.model_validate(data).model_dump(mode="json")
    except ValidationError as exc:
        outcomes[name] = error_lines(exc)
for name in ("SEED_REDUCTION_SERVER", "PARAMETER_SERVER_EXAMPLE", "EVALUATOR_EXAMPLE", "TUNING_EXAMPLE"):
    spec = getattr(examples, name)
    again = type(spec).model_validate(spec.model_dump(mode="json"))
    outcomes[name] = [again == spec, again.to_api()]
json_schemas = {
    cls.__qualname__: cls.model_json_schema()
    for cls in _schema_cache._spec_models()
    if not cls.__name__.startswith("_")
}
print(json.dumps({
    "generated": generated,
    "outcomes": outcomes,
    "json_schemas": json_schemas,
    "cache_file": str(_schema_cache.cache_file()),
}, sort_keys=True, default=str))
"""


def _process(env_changes: dict[str, str | None], *args: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter run with ``args``, the environment changed (``None`` removes a variable)."""
    env = dict(os.environ)
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )


def _run(env_changes: dict[str, str | None], *args: str) -> dict[str, Any]:
    out = _process(env_changes, *args)
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}
    return result


def _probe(env_changes: dict[str, str | None]) -> dict[str, Any]:
    return _run(env_changes, "-c", PROBE)


def _cache_files(directory: Path) -> list[Path]:
    return sorted(directory.rglob("spec-schemas-*.pickle"))


def test_a_cached_schema_validates_exactly_like_a_built_one(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    off = _probe({ENV_VAR: "off"})
    first = _probe({ENV_VAR: str(cache)})  # cold: builds, then writes the file
    second = _probe({ENV_VAR: str(cache)})  # warm: reads it

    assert off["generated"], "the probe must see pydantic generate schemas when nothing is cached"
    assert first["generated"]
    assert second["generated"] == [], "a warm cache leaves pydantic no spec schema to generate"
    assert [p.name for p in _cache_files(cache)] == [Path(first["cache_file"]).name]

    assert second["outcomes"] == off["outcomes"] == first["outcomes"]
    assert second["json_schemas"] == off["json_schemas"]
    refused = [out for out in off["outcomes"].values() if isinstance(out, list) and ":" in str(out[:1])]
    assert len(refused) >= 40, "the bad-spec table must be refused, with field paths, in every mode"


def test_the_default_place_is_beside_the_bytecode_and_follows_its_rules(tmp_path: Path) -> None:
    prefix = tmp_path / "pycache"
    make = ["-c", "from airflow_vertex_dist.specs import Machine; Machine(machine_type='n1-standard-4')"]

    _run({ENV_VAR: None, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}, *make)
    assert _cache_files(prefix) == [], "no bytecode written, no schema cache written"

    _run({ENV_VAR: None, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": None}, *make)
    [written] = _cache_files(prefix)
    specs_dir = ROOT / "airflow_vertex_dist" / "specs"
    assert written.parent == prefix / specs_dir.relative_to(specs_dir.anchor)

    probe = _probe({ENV_VAR: None, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"})
    assert probe["generated"] == [], "a cache already there is read even when nothing may be written"


def test_a_stale_or_broken_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    prefix = tmp_path / "pycache"  # the default place, beside the bytecode
    beside = {ENV_VAR: None, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": None}
    first = _probe(beside)
    current = Path(first["cache_file"])
    other_python = current.with_name("spec-schemas-cpython-39-pydantic2.0-core2.0-0123456789abcdef.pickle")
    other_python.write_bytes(b"another interpreter's")
    stale = current.with_name(current.name[: -len("0123456789abcdef.pickle")] + "0123456789abcdef.pickle")
    current.rename(stale)  # as if written before an edit of the specs
    assert _probe(beside)["generated"]
    assert _cache_files(prefix) == sorted([current, other_python]), "older sources' file removed, not others"

    current.write_bytes(current.read_bytes()[:100])  # truncated, as by a full disk
    broken = _probe(beside)
    assert broken["generated"], "a file that does not load is ignored"
    assert broken["outcomes"] == first["outcomes"]
    assert _probe(beside)["generated"] == [], "and rewritten whole"


def test_a_shared_directory_keeps_every_trees_file(tmp_path: Path) -> None:
    """Two source trees (or environments) pointed at one directory must not evict each other."""
    cache = tmp_path / "cache"
    cache.mkdir()
    other_tree = cache / "spec-schemas-x-0123456789abcdef.pickle"
    other_tree.write_bytes(b"another tree's")
    current = Path(_probe({ENV_VAR: str(cache)})["cache_file"])
    assert _cache_files(cache) == sorted([current, other_tree])
    assert _probe({ENV_VAR: str(cache)})["generated"] == []


def test_off_writes_nothing(tmp_path: Path) -> None:
    prefix = tmp_path / "pycache"
    probe = _probe({ENV_VAR: "off", "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": None})
    assert probe["cache_file"] == "None"
    assert _cache_files(prefix) == []


@pytest.mark.parametrize("setting", ["dir", "off"])
def test_the_warm_command(tmp_path: Path, setting: str) -> None:
    cache = tmp_path / "cache"
    setting_env: dict[str, str | None] = {ENV_VAR: str(cache) if setting == "dir" else "off"}
    out = _process(setting_env, "-m", "airflow_vertex_dist.cli", "warm-schema-cache")
    if setting == "off":
        assert out.returncode == 1 and ENV_VAR in out.stderr
        assert not cache.exists()
        return
    assert out.returncode == 0, out.stderr
    [written] = _cache_files(cache)
    assert out.stdout.strip() == str(written)
    assert _probe({ENV_VAR: str(cache)})["generated"] == []


def test_this_test_session_reads_the_cache_its_conftest_wrote() -> None:
    """Every other spec test in this process validates with schemas read from the cache."""
    from airflow_vertex_dist.specs import Machine, _schema_cache

    assert os.environ[ENV_VAR] != "off"
    assert _schema_cache.lookup(Machine) is not None


def test_importing_the_specs_package_registers_every_spec_model() -> None:
    """The cache holds the models registered once the specs package is imported (its ``warm`` imports
    only the package): every module under specs/ that defines a model must be imported by the package,
    or its models would miss the cache. Run in a fresh interpreter, so no test has imported more."""
    probe = """
import importlib, json, pkgutil
import airflow_vertex_dist.specs as specs
from airflow_vertex_dist.specs import _schema_cache
before = sorted(f"{c.__module__}.{c.__qualname__}" for c in _schema_cache._spec_models())
for info in pkgutil.iter_modules(specs.__path__):
    importlib.import_module(f"airflow_vertex_dist.specs.{info.name}")
after = sorted(f"{c.__module__}.{c.__qualname__}" for c in _schema_cache._spec_models())
print(json.dumps({"before": before, "after": after}))
"""
    out = _run({ENV_VAR: "off"}, "-c", probe)
    assert len(out["before"]) >= 20
    assert out["after"] == out["before"]


def test_the_cache_module_imports_no_spec_module() -> None:
    """No import cycle: the models register themselves with the cache, which sits below them."""
    import ast

    source = (ROOT / "airflow_vertex_dist" / "specs" / "_schema_cache.py").read_text()
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert not [name for name in imported if name and name.startswith("airflow_vertex_dist")]
