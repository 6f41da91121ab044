"""docs/quickstart.md works literally: its shell blocks run as written, in order, in one bash session
from an empty directory with a fresh ``AIRFLOW_HOME`` (the DAG block saved where the page says). Only
the install commands are left out (the project is installed here already) and the emulator's two ports
are swapped for free ones (another emulator may hold the defaults on this machine)."""

from __future__ import annotations

import os
import re
import signal
import socket
from pathlib import Path

import pytest
from doc_blocks import start_session

PAGE = Path(__file__).resolve().parents[1] / "docs" / "quickstart.md"
_FENCE = re.compile(r"^```(?P<lang>\w+)[^\n]*\n(?P<body>.*?)^```", re.S | re.M)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _script() -> str:
    ports = {"8781": _free_port(), "8780": _free_port(), "8782": _free_port()}  # grpc, rest, storage
    parts = []
    for match in _FENCE.finditer(PAGE.read_text()):
        lang, body = match["lang"], match["body"]
        if lang == "bash":
            if re.search(r"^(pip install|make )", body, re.M):
                continue  # installing: done here already
            parts.append(re.sub(r"\b878[012]\b", lambda m: str(ports[m[0]]), body))
        elif lang == "python" and "DAG(" in body:  # "Save this as $AIRFLOW_HOME/dags/quickstart.py"
            parts.append(f"cat > \"$AIRFLOW_HOME/dags/quickstart.py\" <<'PYEOF'\n{body}PYEOF\n")
    return "\n".join(parts)


def test_the_script_has_every_step() -> None:
    script = _script()
    for step in (
        "airflow db migrate",
        "vertex-emulator",
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT",
        "dags/quickstart.py",
        "airflow dags test quickstart",
        "model.txt",
        "kill %1",
    ):
        assert step in script, step


@pytest.mark.slow
def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    proc = start_session(_script(), tmp_path)
    work = tmp_path / "work"  # where the session runs
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out[-6000:]
    assert out.rstrip().endswith("trained") or "\ntrained\n" in out, out[-3000:]
    assert (work / "gcs" / "my-bucket" / "quickstart" / "model" / "model.txt").read_text() == "trained\n"
    assert (work / "airflow-home" / "airflow.db").is_file()
