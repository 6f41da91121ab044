"""docs/how-to/real-airflow.md works literally: its shell blocks run as written, in order, in one bash
session from an empty directory: the emulator, then ``airflow standalone`` on the page's own ports (each
swapped for a free one: another Airflow or emulator may hold them on this machine). Between starting
and stopping them, a DAG of one ``@task`` is triggered and must succeed through the scheduler, which
it does only when the task process reaches the Execution API at the page's URL. Stopping must be clean:
standalone shuts its components down and exits 0, the emulator exits 0, and no process of the session
is left."""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import sys
import time
from pathlib import Path

import psutil
import pytest
from doc_blocks import start_session

PAGE = Path(__file__).resolve().parents[1] / "docs" / "how-to" / "real-airflow.md"
_FENCE = re.compile(r"^```(?P<lang>\w+)[^\n]*\n(?P<body>.*?)^```", re.S | re.M)
#: the page's ports: Airflow's API server, the emulator's REST, gRPC and storage, the two log servers
_PORTS = re.compile(r"\b(9080|9780|9781|9782|9793|9794)\b")

_DAG = """cat > "$AIRFLOW_HOME/dags/hello.py" <<'PYEOF'
from datetime import datetime

from airflow.sdk import dag, task


@dag(schedule=None, start_date=datetime(2026, 1, 1))
def hello():
    @task
    def say():
        print("hello from a task")

    say()


hello()
PYEOF
"""

_RUN = """
python - <<'PYEOF'
import os, time, urllib.request
url = os.environ["AIRFLOW__API__BASE_URL"] + "/api/v2/monitor/health"
deadline = time.monotonic() + 400
while True:  # the API server answers once standalone's components are up
    try:
        urllib.request.urlopen(url, timeout=5)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(1)
PYEOF
until airflow dags list -o plain 2>/dev/null | grep -q '^hello'; do sleep 2; done
airflow dags unpause hello > /dev/null
airflow dags trigger hello > /dev/null
until airflow dags list-runs hello -o plain 2>/dev/null | grep -Eq ' (success|failed) '; do sleep 3; done
airflow dags list-runs hello -o plain | grep -q ' success ' && echo "RUN SUCCEEDED"
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _script() -> str:
    ports: dict[str, int] = {}
    blocks = [m["body"] for m in _FENCE.finditer(PAGE.read_text()) if m["lang"] == "bash"]
    start, stop = blocks[:-1], blocks[-1]
    script = "\n".join(start) + _DAG + _RUN + stop + "\necho STOPPED\n"
    return _PORTS.sub(lambda m: str(ports.setdefault(m[0], _free_port())), script)


def test_the_script_has_every_step() -> None:
    script = _script()
    for step in (
        "set -m",
        "vertex-emulator",
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
        "airflow standalone",
        'kill -INT "$AIRFLOW_PID"',
        'kill -TERM "$EMULATOR_PID"',
    ):
        assert step in script, step
    assert not _PORTS.search(script), "a port of the page was left in: it may be taken on this machine"


def test_a_new_dag_file_is_seen_within_seconds_or_at_once() -> None:
    """Airflow 3's DAG processor looks for new DAG files every ``[dag_processor] refresh_interval``
    (300 s unless set): the page's environment shortens it, before ``airflow standalone`` starts, and
    the page says how to register a new file at once (``airflow dags reserialize``, a real command)."""
    from airflow.cli.cli_config import DAGS_COMMANDS
    from airflow.configuration import conf

    script = _script()
    found = re.search(r"^export AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL=(\d+)", script, re.M)
    assert found is not None, "the page leaves the DAG processor's 5 minutes for a new DAG file"
    assert 0 < int(found[1]) < 300
    assert found.start() < script.index("airflow standalone")
    assert conf.has_option("dag_processor", "refresh_interval")
    assert "reserialize" in {command.name for command in DAGS_COMMANDS}
    text = PAGE.read_text()
    assert "airflow dags reserialize" in text
    assert text.index("airflow dags reserialize") < text.index("## Stopping both")


def test_a_task_waits_for_the_execution_apis_slow_first_answer() -> None:
    """A task waits ``[workers] execution_api_timeout`` (5 s unless set) for each answer of the Execution
    API, 5 tries a call: the page gives it 60 s, before ``airflow standalone`` starts, as the first call
    after a start can take half a minute on a busy machine (27 s seen on 2 cores running 9 other busy
    processes; then the task failed without running, its run ``failed``)."""
    from airflow.configuration import conf

    script = _script()
    found = re.search(r"^export AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT=(\d+)", script, re.M)
    assert found is not None, "the page leaves a task 5 s for the Execution API's first answer"
    assert int(found[1]) >= 30
    assert found.start() < script.index("airflow standalone")
    assert float(conf.get_default_value("workers", "execution_api_timeout")) == 5
    assert int(conf.get_default_value("workers", "execution_api_retries")) == 5


def _session_processes(sid: int) -> list[psutil.Process]:
    """The session's processes still running: a zombie (exited, its parent not yet told) holds nothing
    but its entry in the process table, and the session's shell or init reaps it in its own time."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def _left_running(sid: int) -> list[psutil.Process]:
    """The session's processes still running once the script ended, each given up to 5 s to finish
    exiting: the stop block's last SIGKILL returns before the kernel has torn the killed process down."""
    deadline = time.monotonic() + 5
    while (left := _session_processes(sid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _describe(proc: psutil.Process) -> str:
    """A leftover process as a reader of the failure needs it: pid, parent, process group, command."""
    try:
        command = " ".join(proc.cmdline())[:200]
        return f"{proc.pid} (ppid {proc.ppid()}, pgid {os.getpgid(proc.pid)}): {command}"
    except (psutil.Error, ProcessLookupError):
        return f"{proc.pid} (gone)"


#: what a reader of a failed run needs from the metadata database (the page's SQLite, in AIRFLOW_HOME)
_STATES = (
    "SELECT dag_id, run_id, state, queued_at, start_date, end_date FROM dag_run",
    "SELECT task_id, state, try_number, queued_dttm, start_date, end_date, pid, hostname FROM task_instance",
    "SELECT task_id, state, try_number, start_date, end_date, pid FROM task_instance_history",
)

#: lines of ``airflow.log`` worth showing: any component's warnings, errors and exceptions, those about hello
_NOTED = re.compile(
    r"\[(warning|error|critical) *\]|Traceback|\| (\w+\.)*\w+(Error|Exception|Timeout): |hello"
)
#: the task's own log lines, which the scheduler's LocalExecutor worker echoes (the task log has them)
_TASK_LINE = re.compile(r"task_id=\w+ ti_id=|\[task(\.stdout|\.stderr)?\]")


def _diagnosis(work: Path) -> str:
    """Why the run of ``hello`` did not succeed, as far as the session left it on disk: the run's and its
    task's states (and earlier tries) from the page's metadata database, each task log of the run, and
    the warnings, errors and lines about ``hello`` in ``airflow.log``; read after the session stopped."""
    home = work / "airflow-home"
    parts: list[str] = []
    try:
        with sqlite3.connect(f"file:{home / 'airflow.db'}?mode=ro", uri=True) as db:
            for query in _STATES:
                rows = db.execute(query).fetchall()
                parts.append(f"{query}:\n" + "\n".join(" | ".join(map(str, row)) for row in rows))
    except sqlite3.Error as error:
        parts.append(f"no states from {home / 'airflow.db'}: {error}")
    for log in sorted((home / "logs" / "dag_id=hello").glob("run_id=*/task_id=*/attempt=*.log*")):
        parts.append(f"{log.relative_to(home)}:\n" + log.read_text(errors="replace")[-6000:])
    if not any(part.startswith("logs/") for part in parts):
        parts.append(f"no task log under {home / 'logs'}")
    log_file = work / "airflow.log"
    lines = log_file.read_text(errors="replace").splitlines() if log_file.exists() else []
    noted = [line for line in lines if _NOTED.search(line) and not _TASK_LINE.search(line)]
    parts.append("airflow.log, its warnings, errors and lines about hello:\n" + "\n".join(noted[-60:]))
    return "\n\n".join(parts)


@pytest.mark.stack  # a real Airflow of its own: make test runs it in a stack job (stack-celery)
@pytest.mark.timeout(900)  # four Airflow components start, run a task, stop: 4 minutes under load
def test_the_page_runs_as_written(tmp_path: Path) -> None:
    proc = start_session(_script(), tmp_path)
    work = tmp_path / "work"  # where the session runs
    try:
        out, _ = proc.communicate(timeout=900)
        left = [_describe(p) for p in _left_running(proc.pid)]
    finally:
        for leftover in _session_processes(proc.pid):  # set -m: the jobs have process groups of their own
            leftover.send_signal(signal.SIGKILL)
    log_file = work / "airflow.log"
    airflow_log = log_file.read_text(errors="replace") if log_file.exists() else ""
    assert proc.returncode == 0, out[-4000:] + airflow_log[-4000:] + "\n" + _diagnosis(work)
    assert "RUN SUCCEEDED" in out and out.rstrip().endswith("STOPPED"), out[-3000:] + "\n" + _diagnosis(work)
    # standalone stopped on SIGINT (the page's fallback, a SIGTERM to its group after 90 s, is for an
    # Airflow scheduler that waits on a LocalExecutor worker forever: apache/airflow#67870)
    assert "Shutting down components" in airflow_log, airflow_log[-3000:]
    assert not left, "processes of the session left running:\n" + "\n".join(left) + "\n" + airflow_log[-3000:]


#: a stand-in for the hang the stop block guards against (apache/airflow#67870), in the shape it has: a
#: parent that ignores SIGINT (standalone waiting on its scheduler) and a child that takes 2 s to shut
#: down on SIGTERM (a component ended by the group's SIGTERM) or, with ``stubborn``, ignores it as well
_HANGING = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
if os.fork() == 0:
    slow = lambda *_: (time.sleep(2), os._exit(0))
    signal.signal(signal.SIGTERM, signal.SIG_IGN if sys.argv[1] == "stubborn" else slow)
    while True:
        time.sleep(0.1)
open("ready", "w").close()
while True:
    time.sleep(0.1)
"""


@pytest.mark.parametrize("child", ["slow", "stubborn"])
def test_the_stop_leaves_no_process_of_a_standalone_that_hangs(tmp_path: Path, child: str) -> None:
    """The page's stop block, its two bounds shortened (90 s -> 1 s, 30 s -> 4 s), run against a process
    group that hangs as Airflow's does: the script ends with nothing of the group left, a slow child
    waited for (not left behind), a child that ignores SIGTERM killed."""
    stop = [m["body"] for m in _FENCE.finditer(PAGE.read_text()) if m["lang"] == "bash"][-1]
    assert "timeout 90 " in stop and "timeout 30 " in stop
    stop = stop.replace("timeout 90 ", "timeout 1 ").replace("timeout 30 ", "timeout 4 ")
    (tmp_path / "hang.py").write_text(_HANGING)
    script = (
        f"set -m\n{sys.executable} ../hang.py {child} & AIRFLOW_PID=$!\n"
        "until [ -e ready ]; do sleep 0.1; done\n"
        "sleep 300 & EMULATOR_PID=$!\n"
        + stop.replace('wait "$EMULATOR_PID"', 'wait "$EMULATOR_PID" || true')
        + "\necho STOPPED\n"
    )
    proc = start_session(script, tmp_path)
    try:
        out, _ = proc.communicate(timeout=60)
        left = [_describe(p) for p in _left_running(proc.pid)]
    finally:
        for leftover in _session_processes(proc.pid):
            leftover.send_signal(signal.SIGKILL)
    assert proc.returncode == 0 and out.rstrip().endswith("STOPPED"), out
    assert not left, left


def test_the_session_gets_a_sigint_the_test_itself_ignores(tmp_path: Path) -> None:
    """The page stops standalone with SIGINT: the session has it at its default, as a terminal's shell
    has, even when the test's process ignores it (a pytest started as a background job of a script):
    otherwise standalone, inheriting the ignored SIGINT, runs on until the stop block's 90 s bound."""
    script = 'set -m\nsleep 20 & PID=$!\nkill -INT "$PID"\nwait "$PID" || echo "exit $?"\n'
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = start_session(script, tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        for leftover in _session_processes(proc.pid):
            leftover.send_signal(signal.SIGKILL)
    assert "exit 130" in out, out  # 128 + SIGINT: the sleep ended by the signal (not "Done" after 20 s)
