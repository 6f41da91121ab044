"""Whether a replica gets ``/gcs/`` (the emulator's ``gs://`` root, as Vertex AI's Cloud Storage FUSE
mount): the launcher prefix its argv is run under and the note its log starts with.

With ``config.gcs_mount == "auto"`` (``--gcs-mount auto``, the default) the emulator probes once, the
first time a replica starts, whether this host lets a process make the mount namespace the launcher
(gcs_mount.py) needs: it runs the launcher with a command that checks ``/gcs`` is the gcs root, and
keeps the answer for that gcs root for as long as the emulator process lives. Where it works, every
replica is started as ``<python> -I -S gcs_mount.py <gcs root> -- <argv...>`` and its log starts with
``GCS_MOUNTED_NOTE``; where it does not (not Linux, user namespaces disabled, a seccomp filter that
refuses ``unshare``...), or with ``"off"``, the argv runs as it is and the log starts with
``GCS_NOTE``, as before the launcher existed. The probe's failure is logged once, as a warning naming
its reason.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

from vertex_emulator.core.config import EmulatorConfig, check_gcs_mount
from vertex_emulator.core.gcs import GCS_MOUNTED_NOTE, GCS_NOTE

__all__ = ["LAUNCHER", "gcs_mount_problem", "launcher_argv", "replica_launch"]

log = logging.getLogger(__name__)

#: the launcher, run by path (it imports nothing but the standard library)
LAUNCHER = Path(__file__).with_name("gcs_mount.py")
_PROBE_TIMEOUT_S = 60.0
#: gcs root -> None (the mount works) or why it does not
_probed: dict[Path, str | None] = {}
_lock = threading.Lock()


def launcher_argv(gcs_root: Path) -> list[str]:
    """The prefix that runs an argv with ``gcs_root`` at ``/gcs``: ``[*prefix, *argv]``."""
    return [sys.executable, "-I", "-S", str(LAUNCHER), str(gcs_root), "--"]


def _probe(gcs_root: Path) -> str | None:
    if not sys.platform.startswith("linux"):
        return f"mount namespaces are Linux only (this is {sys.platform})"
    try:
        st = os.stat(gcs_root)
    except OSError as exc:
        return f"the gcs root {str(gcs_root)!r} cannot be read: {exc.strerror}"
    check = (
        "import os, sys; s = os.stat('/gcs'); "
        f"sys.exit(0 if (s.st_dev, s.st_ino) == ({st.st_dev}, {st.st_ino}) else 3)"
    )
    try:
        done = subprocess.run(
            [*launcher_argv(gcs_root), sys.executable, "-I", "-S", "-c", check],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the launcher could not be run: {exc}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return said[-1] if said else f"the launcher's check ended with status {done.returncode}"


def gcs_mount_problem(gcs_root: Path) -> str | None:
    """None when replicas can get ``gcs_root`` at ``/gcs`` on this host, else why not (probed once per
    gcs root; the first failure is logged)."""
    root = Path(gcs_root).resolve()
    with _lock:
        if root not in _probed:
            _probed[root] = problem = _probe(root)
            if problem is not None:
                log.warning("replicas get no /gcs/ (the gs:// root, %s): %s", root, problem)
        return _probed[root]


def replica_launch(config: EmulatorConfig) -> tuple[list[str], str]:
    """``(prefix, note)``: what a replica's argv is run under and the line its log starts with."""
    check_gcs_mount(config.gcs_mount)
    if config.gcs_mount == "off" or gcs_mount_problem(config.gcs_root) is not None:
        return [], GCS_NOTE
    return launcher_argv(Path(config.gcs_root).resolve()), GCS_MOUNTED_NOTE
