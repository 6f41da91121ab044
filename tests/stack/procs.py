"""The stack harness's processes: starting and stopping them as groups, finding the ones a stack left
(by the marker in their environment or by session), polling, and the distribution packages they need
(`stack.AirflowStack` and `celery_stack.CeleryStack` build on these)."""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "MARKER_ENV",
    "Proc",
    "ProcessScan",
    "StackError",
    "apt_install",
    "free_port",
    "postgres_bin_dir",
    "tail",
]

MARKER_ENV = "AVD_STACK_MARKER"


class StackError(RuntimeError):
    """The stack could not start or misbehaved; the message quotes the relevant log tail."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tail(path: Path, lines: int = 40) -> str:
    """The last `lines` lines of a log file, for an error message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


#: how long an install waits for another to release dpkg's lock
APT_LOCK_WAIT_S = 900


def apt_install(package: str) -> None:
    """Install a distribution package with apt-get, when we are root and have apt-get (else nothing:
    the caller then reports what is missing)."""
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        # make test's stack jobs start at once and each may install a package (PostgreSQL, Redis,
        # Chromium): dpkg takes one at a time, so the others wait for its lock (apt-get's own wait, and
        # ours for the test processes) instead of failing with "Could not get lock".
        wait = ["-o", f"DPkg::Lock::Timeout={APT_LOCK_WAIT_S}"]
        with open(Path(tempfile.gettempdir()) / "airflow-vertex-dist-apt.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            subprocess.run(["apt-get", *wait, "update", "-q"], check=False, env=env, capture_output=True)
            subprocess.run(
                ["apt-get", *wait, "install", "-y", "-q", package], check=True, env=env, capture_output=True
            )


def postgres_bin_dir() -> Path:
    """The directory of initdb/postgres, installing the distribution's package when missing."""

    def find() -> Path | None:
        for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
            if (Path(candidate) / "initdb").exists() and (Path(candidate) / "postgres").exists():
                return Path(candidate)
        initdb = shutil.which("initdb")
        if initdb and (Path(initdb).resolve().parent / "postgres").exists():
            return Path(initdb).resolve().parent
        return None

    found = find()
    if found is None:
        apt_install("postgresql")
        found = find()
    if found is None:
        raise StackError("PostgreSQL is not installed (no initdb/postgres) and could not be installed")
    return found


class Proc:
    """One started process: argv, log file, Popen (own session, so a group to signal)."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.argv, self.env, self.log = name, argv, env, log
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.argv,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal_group(self, sig: int) -> None:
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, grace: float = 15.0, sig: int = signal.SIGTERM) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self.signal_group(sig)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        self.signal_group(signal.SIGKILL)  # whatever is left of the group
        try:
            self.popen.wait(10)
        except subprocess.TimeoutExpired:
            pass


class ProcessScan:
    """The /proc scans of a stack: its processes' trees, the live ones, those it left behind. The
    stack sets the three attributes below."""

    marker: str
    procs: dict[str, Proc]
    emulator_state: Path

    @staticmethod
    def _stat(pid: int) -> tuple[str, int, int] | None:
        """(state, parent pid, session id) of a process, or None when it is gone."""
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return fields[0], int(fields[1]), int(fields[3])
        except (OSError, ValueError, IndexError):
            return None

    @staticmethod
    def _all_pids() -> list[int]:
        return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]

    def tree_pids(self, root: int) -> list[int]:
        """``root`` and its live descendants (zombies excluded), whatever their environment."""
        children: dict[int, list[int]] = {}
        alive = set()
        for pid in self._all_pids():
            stat = self._stat(pid)
            if stat is None or stat[0] == "Z":
                continue
            alive.add(pid)
            children.setdefault(stat[1], []).append(pid)
        found, todo = [], [root]
        while todo:
            pid = todo.pop()
            if pid in alive:
                found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def alive(self, pids: Iterable[int]) -> list[int]:
        """Those of ``pids`` still running (zombies excluded)."""
        return [pid for pid in pids if (stat := self._stat(pid)) is not None and stat[0] != "Z"]

    def marked_pids(self) -> list[int]:
        """Live processes of this stack (zombies excluded): those carrying its marker in their
        environment, and those in the session of one of its processes. The second catches what the
        first misses: a process that rewrites its title (Celery's pool processes and Airflow's task
        processes do, with setproctitle) can overwrite the environment /proc shows for it."""
        needle = f"{MARKER_ENV}={self.marker}".encode()
        sessions = {proc.popen.pid for proc in self.procs.values() if proc.popen is not None}
        found = []
        for pid in self._all_pids():
            if pid == os.getpid():
                continue
            stat = self._stat(pid)
            if stat is None or stat[0] == "Z":
                continue
            if stat[2] not in sessions:
                try:
                    if needle not in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                        continue
                except OSError:
                    continue
            found.append(pid)
        return found

    def replica_pids(self, jobs: Iterable[Mapping[str, Any]] | None = None) -> list[int]:
        """Live replica processes of the emulator (their cwd is under the emulator's work dir); with
        ``jobs`` (emulator job dicts), only those of these jobs (the work dir's first part is the job id)."""
        work = str(self.emulator_state / "work")
        ids = None if jobs is None else {str(j["name"]).rsplit("/", 1)[1] for j in jobs}
        out = []
        for pid in self.marked_pids():
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue  # gone meanwhile
            if ids is None:
                if cwd.startswith(work):
                    out.append(pid)
            elif cwd.startswith(work + "/") and cwd[len(work) + 1 :].split("/", 1)[0] in ids:
                out.append(pid)
        return out

    def pids_of_cmd(self, needle: str) -> list[int]:
        out = []
        for pid in self.marked_pids():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if needle in cmd:
                out.append(pid)
        return out
