"""One docstring style (scripts/docstring_roles.py, which ``make lint`` runs over the package, the
example DAGs and the scripts): no Sphinx role reaches the API reference."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import docstring_roles  # noqa: E402

ROLE = docstring_roles.ROLE


def test_the_role_pattern_finds_roles_and_not_fields() -> None:
    role = ":class" + ":"  # spelled in two parts, so that this file shows no role itself
    assert ROLE.search(f"see {role}`~airflow_vertex_dist.specs.Machine`")
    assert ROLE.search(":py" + ":func:`load_spec`")
    assert not ROLE.search(":param job_name: the job's resource name")
    assert not ROLE.search("``Machine`` and ``load_spec``")


def test_the_check_names_every_role_in_the_rendered_trees(tmp_path: Path) -> None:
    role = ":func" + ":`load_spec`"
    (tmp_path / "dags").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "dags" / "a.py").write_text(f'"""Uses {role}."""\n\nX = 1\n"""Also {role}."""\n')
    (tmp_path / "scripts" / "b.py").write_text('"""Fine: ``load_spec``.\n\n:param x: a field."""\n')
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "c.py").write_text(f'"""Not rendered: {role}."""\n')
    assert docstring_roles.roles(tmp_path) == ["dags/a.py:1", "dags/a.py:4"]
    assert docstring_roles.main(["--root", str(tmp_path)]) == 1
    (tmp_path / "dags" / "a.py").write_text('"""Uses ``load_spec``."""\n')
    assert docstring_roles.main(["--root", str(tmp_path)]) == 0
