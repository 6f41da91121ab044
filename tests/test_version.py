"""The version has one source, the distribution metadata built from pyproject.toml: the package root,
the provider info and the client user agent all read it, and no module spells the number itself."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

import airflow_vertex_dist
from airflow_vertex_dist.common.version import package_version
from airflow_vertex_dist.get_provider_info import get_provider_info

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT_VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_every_reader_gives_the_pyproject_version() -> None:
    assert package_version() == PYPROJECT_VERSION
    assert airflow_vertex_dist.__version__ == PYPROJECT_VERSION
    assert get_provider_info()["versions"] == [PYPROJECT_VERSION]


def test_the_user_agent_carries_the_version() -> None:
    from airflow_vertex_dist.hooks._clients import _CLIENT_INFO

    assert _CLIENT_INFO.user_agent == f"airflow-vertex-dist/{PYPROJECT_VERSION}"


def test_no_module_spells_the_version() -> None:
    literal = re.compile(r"['\"]" + re.escape(PYPROJECT_VERSION) + r"['\"]")
    spelled = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "airflow_vertex_dist").rglob("*.py")
        if literal.search(p.read_text())
    ]
    assert spelled == []
