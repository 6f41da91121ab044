"""The command a replica runs, from its worker pool's spec.

- Container specs run ``command + args`` on the host; a spec without ``command`` runs
  ``config.image_map[imageUri] + args`` (the image's entrypoint), and fails the job when the image
  is not mapped. Python package specs run ``<python> -m <pythonModule> <args>`` where ``<python>``
  is ``config.image_map[executorImageUri]`` or the emulator's own interpreter; their packages are
  installed once per pool (packages.py) and put on the replica's ``PYTHONPATH``.
- Reduction Server replicas (``*/vertex-ai-restricted/training/reductionserver:*``) are shown
  running but do no reduction: each is an idle placeholder process that waits to be stopped.
- A tuning trial's primary must be able to import ``hypertune`` (cloudml-hypertune), through which it
  reports its metric: ``check_hypertune`` fails the trial's job up front when it cannot.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vertex_emulator.cluster import Replica
from vertex_emulator.config import EmulatorConfig
from vertex_emulator.driver import Interrupted, JobError
from vertex_emulator.packages import InstallInterrupted, PackageInstallError, install_packages

__all__ = ["check_hypertune", "replica_command"]

_PYTHON_RE = re.compile(r"python[0-9.]*")
_REDUCER_CODE = (
    "import signal\n"
    "print('emulated Reduction Server replica: accepted and idle; it performs no reduction', flush=True)\n"
    "signal.pause()\n"
)


def replica_command(
    rep: Replica,
    *,
    pool_field: str,
    config: EmulatorConfig,
    job_id: str,
    log_dir: Path,
    installed: dict[int, Path],
    stop: threading.Event,
) -> tuple[list[str], list[Mapping[str, Any]], Path | None]:
    """``(argv, the pool's env list, a directory for PYTHONPATH or None)`` for replica ``rep``.

    ``installed`` maps pool index -> installed packages directory, shared by the replicas of one job
    (a pool's packages are installed once). Raises ``JobError`` for a spec that cannot run and
    ``Interrupted`` when ``stop`` is set during a package install.
    """
    spec = rep.spec
    if rep.is_reducer:
        return [sys.executable, "-S", "-c", _REDUCER_CODE], [], None
    container = spec.get("containerSpec")
    package = spec.get("pythonPackageSpec")
    if container:
        command = [str(a) for a in container.get("command") or []]
        args = [str(a) for a in container.get("args") or []]
        image = str(container.get("imageUri", ""))
        if command:
            return command + args, list(container.get("env") or []), None
        prefix = config.image_map.get(image)
        if not prefix:
            raise JobError(
                3,
                f"{pool_field}.containerSpec: image {image!r} gives no command and the emulator has no "
                "image map entry for it (add one with --image-map IMAGE=COMMAND, or set command)",
            )
        return list(prefix) + args, list(container.get("env") or []), None
    if package:
        module = str(package.get("pythonModule") or "")
        if not module:
            raise JobError(3, f"{pool_field}.pythonPackageSpec.pythonModule: required")
        if rep.pool not in installed:
            target = config.state_dir / "packages" / job_id / f"workerpool{rep.pool}"
            try:
                installed[rep.pool] = install_packages(
                    [str(u) for u in package.get("packageUris") or []],
                    target,
                    gcs_root=config.gcs_root,
                    log_path=log_dir / f"install-workerpool{rep.pool}.log",
                    field=f"{pool_field}.pythonPackageSpec.packageUris",
                    stop=stop,
                )
            except InstallInterrupted:
                raise Interrupted from None
            except PackageInstallError as exc:
                raise JobError(3, str(exc)) from None
        executor = str(package.get("executorImageUri", ""))
        prefix = list(config.image_map.get(executor) or [sys.executable])
        args = [str(a) for a in package.get("args") or []]
        return prefix + ["-m", module] + args, list(package.get("env") or []), installed[rep.pool]
    raise JobError(3, f"{pool_field}: exactly one of containerSpec or pythonPackageSpec is required")


def check_hypertune(argv: list[str], env: Mapping[str, str], cwd: Path) -> None:
    """A tuning trial's primary reports its metric with cloudml-hypertune: check that its Python
    (the first ``python*`` of the command, run with the replica's environment) can import it."""
    python = next((a for a in argv if _PYTHON_RE.fullmatch(os.path.basename(a))), None)
    if python is None:
        return  # not a Python command we can name: the trial's log will tell
    try:
        probe = subprocess.run(
            [python, "-c", "import hypertune"],
            env=dict(env),
            cwd=str(cwd),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JobError(3, f"cannot check that {python!r} imports hypertune: {exc}") from None
    if probe.returncode != 0:
        raise JobError(
            3,
            f"The trial's Python ({python}) cannot import hypertune: install cloudml-hypertune where the "
            "trainer runs (pip install cloudml-hypertune), as in the training container on Vertex AI; "
            "the trial reports its metric through it.",
        )
