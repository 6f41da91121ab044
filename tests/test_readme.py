"""The README's example DAG is real: it parses, validates and renders what the README says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_dag_parses_and_renders(tmp_path: Path) -> None:
    (block,) = _python_blocks()
    check = """
import json
body = spec.to_api(location="europe-west4")
pools = body["jobSpec"]["workerPoolSpecs"]
assert [p["replicaCount"] for p in pools] == [1, 4, 16], pools
assert pools[2]["containerSpec"]["imageUri"].startswith("europe-docker.pkg.dev/"), pools[2]
assert type(dag.get_task("train")).__name__ == "VertexTrainingOperator"
assert "google.cloud.aiplatform" not in __import__("sys").modules
print("ok")
"""
    # The README's `with DAG(...)` has no `as dag`: fetch the DAG from the context it registered.
    script = block.replace("catchup=False):", "catchup=False) as dag:") + check
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")


def test_readme_commands_exist() -> None:
    text = README.read_text()
    makefile = (README.parent / "Makefile").read_text()
    for target in re.findall(r"^make (\w[\w-]*)", text, re.M):
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"make {target} is not a Makefile target"
    ci = (README.parent / ".ci" / "run").read_text()
    assert "make test" in ci


def test_readme_installs_with_the_constraints_of_exactly_the_tested_releases() -> None:
    """The README's install commands name each Airflow release the matrix tests (tests/compat/matrix.py),
    no other, each with that release's own constraints file (Airflow's URL pattern, for the user's
    Python); nothing is fetched here."""
    from compat.matrix import CELLS, MAIN

    url = (
        "https://raw.githubusercontent.com/apache/airflow/constraints-{v}/constraints-${{PYTHON_VERSION}}.txt"
    )
    line = r'^pip install \./ "apache-airflow==([\d.]+)" --constraint "([^"]+)"$'
    commands = re.findall(line, README.read_text(), re.M)
    assert commands, "the README gives no install command with Airflow's constraints"
    for version, constraints in commands:
        assert constraints == url.format(v=version), (version, constraints)
    tested = {MAIN.airflow, *(cell.airflow for cell in CELLS)}
    assert sorted(version for version, _ in commands) == sorted(tested)
    assert 'PYTHON_VERSION="$(python -c' in README.read_text()
