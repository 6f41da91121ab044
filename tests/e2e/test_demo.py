"""``scripts/demo.py`` (what ``make demo`` runs): the retraining DAG end to end, a readable summary, and
nothing left running afterwards."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from datetime import date
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "demo.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vertex_dist_demo_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def processes_under(path: Path) -> list[int]:
    """Processes whose command line or working directory mentions ``path``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if str(path) in cmdline or cwd.startswith(str(path)):
            found.append(int(entry.name))
    return found


def test_demo_runs_the_retraining_dag_and_leaves_nothing_running(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--workdir", str(workdir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-3000:]
    assert "== DAG run manual__" in out and ": success" in out
    assert re.search(r"^snapshot_week\s+success$", out, re.M) and re.search(r"^train\s+success$", out, re.M)
    # the run covered a whole week, and its model went to that week's directory
    start, end = re.search(r"data interval (\d{4}-\d\d-\d\d)\S* -> (\d{4}-\d\d-\d\d)", out).groups()  # type: ignore[union-attr]
    assert (date.fromisoformat(end) - date.fromisoformat(start)).days == 7
    week = f"{start.replace('-', '')}-{end.replace('-', '')}"
    assert f"-- model: gs://vertex-dist-examples/retraining/models/{week}/model/" in out
    # pools table and replicas
    assert re.search(r"^0\s+primary\s+1\s+n1-standard-4", out, re.M)
    assert re.search(r"^1\s+workers\s+2\s+n1-standard-4", out, re.M)
    assert re.search(r"^workerpool0-0\s+127\.0\.0\.1:\d+\s+\d+\s+SUCCEEDED\s+0$", out, re.M)
    for key in ("workerpool1-0", "workerpool1-1"):  # done, or stopped (SIGTERM) once the primary succeeded
        assert re.search(rf"^{key}\s+127\.0\.0\.1:\d+\s+\d+\s+[A-Z]+\s+(0|143)$", out, re.M), key
    assert "none: a CustomJob has no trials" in out
    model_dir = workdir / "gcs" / "vertex-dist-examples" / "retraining" / "models" / week / "model"
    for name in ("model.json", "metrics.json"):
        size = (model_dir / name).stat().st_size
        assert re.search(rf"^{re.escape(name)}\s+{size}$", out, re.M)
    assert re.search(r"^metrics: accuracy=0\.\d+", out, re.M)
    assert "processes left running: 0" in out
    assert processes_under(workdir) == []
    assert _script().live_children() == []
