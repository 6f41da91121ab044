"""Python package specs: install a pool's ``packageUris`` into a per-job directory, offline.

Each URI is a ``gs://`` URI mapped through ``gcs_root`` (Create refuses any other: rules/tasks.py; a
job inserted in the store directly may also give a local path) naming a wheel, an sdist
(``.tar.gz``/``.zip``) or a project directory. They are installed with
``pip install --no-index --no-deps --no-build-isolation --target <dir>``: nothing is downloaded, the
package's own dependencies must already be importable by the interpreter that runs the replica, and
sdists build with the build backend (setuptools...) of that interpreter. The replica then runs
``python -m <pythonModule> <args>`` with ``<dir>`` first on ``PYTHONPATH``.

pip, and the package's own ``setup.py`` it runs for an sdist or a project directory, are user code
like a replica: they run with the replica's clean environment (``env``: what a local process needs,
the service's variables and the pool's ``env``, never the emulator's own credentials or
``AIRFLOW_CONN_*``; cluster.local_env) and under the replica's supervisor (procs.spawn,
supervise.py), so whatever they start -- a daemon that double-forks, a process that calls
``setsid`` -- is killed when pip ends, when the job is cancelled, when the install times out and
when the emulator dies.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from vertex_emulator.core.gcs import to_local_path
from vertex_emulator.runtime import procs

__all__ = ["InstallInterrupted", "PackageInstallError", "install_packages", "resolve_package_uris"]


class PackageInstallError(RuntimeError):
    """The packages of a pool could not be installed; the message says which and why."""


class InstallInterrupted(PackageInstallError):
    """The install was stopped because the job was cancelled or the emulator is closing."""


def resolve_package_uris(uris: Sequence[str], gcs_root: Path, *, field: str) -> list[Path]:
    """Local paths for ``uris``; PackageInstallError naming ``field[i]`` for a missing one."""
    if not uris:
        raise PackageInstallError(f"{field}: at least one package URI is required")
    out: list[Path] = []
    for i, uri in enumerate(uris):
        try:
            path = to_local_path(str(uri), gcs_root, field=f"{field}[{i}]")
        except ValueError as exc:
            raise PackageInstallError(str(exc)) from None
        if not path.exists():
            raise PackageInstallError(f"{field}[{i}]: {uri!r} does not exist (looked at {path})")
        out.append(path)
    return out


def install_packages(
    uris: Sequence[str],
    target: Path,
    *,
    gcs_root: Path,
    log_path: Path,
    field: str,
    env: Mapping[str, str],
    python: str = sys.executable,
    timeout_s: float = 600.0,
    stop: threading.Event | None = None,
) -> Path:
    """Install ``uris`` into ``target`` (created) with environment ``env``, under a supervisor that
    kills pip's whole process tree when pip ends or is stopped; pip's output goes to ``log_path``.
    Returns ``target``. Call it from the thread that owns the job's processes (driver.py)."""
    paths = resolve_package_uris(uris, gcs_root, field=field)
    target.mkdir(parents=True, exist_ok=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        python,
        "-m",
        "pip",
        "install",
        "--no-index",
        "--no-deps",
        "--no-build-isolation",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
        "--target",
        str(target),
        *(os.path.abspath(p) for p in paths),  # pip runs in ``target``
    ]
    deadline = time.monotonic() + timeout_s
    with open(log_path, "ab") as log:
        proc = procs.spawn(argv, env=env, cwd=target, log=log, grace_s=0.0, records=False)
        try:
            while True:  # wait for pip, but give up when the job is cancelled or the emulator closes
                try:
                    proc.wait(timeout=0.1)
                    break
                except subprocess.TimeoutExpired:
                    if stop is not None and stop.is_set():
                        raise InstallInterrupted(f"{field}: pip install interrupted") from None
                    if time.monotonic() > deadline:
                        raise PackageInstallError(
                            f"{field}: pip install took longer than {timeout_s:.0f}s"
                        ) from None
        finally:
            if proc.poll() is None:
                procs.stop([proc], 0.0)  # the supervisor kills pip's whole tree
    if proc.returncode != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-10:]
        raise PackageInstallError(
            f"{field}: pip install failed with exit code {proc.returncode}:\n" + "\n".join(tail)
        )
    return target
