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
- ``$(NAME)`` references in a container spec's ``command`` and ``args`` and a python package spec's
  ``args`` are expanded from the replica's environment as Kubernetes expands a container's command and
  args (``cluster.expand_references``): the pool's ``env`` and the service's variables, never the
  image's (here: the emulator's ``PATH``, ``HOME``...); the image map's command and the emulator's
  ``python -m <module>`` are not the spec's, so they are not expanded. Sources: Google's own samples
  pass ``"--model_dir=$(AIP_MODEL_DIR)"`` in ``containerSpec.args`` ("AIP_MODEL_DIR is set by the
  service according to baseOutputDirectory", python-aiplatform
  ``samples/snippets/pipeline_service/create_training_pipeline_custom_job_sample.py``), and the v1
  ``ModelContainerSpec.command``/``args`` comments spell the rule out ("In order for environment
  variables to be expanded, reference them by using the following syntax: $(VARIABLE_NAME) ... If a
  variable cannot be resolved, the reference in the input string is used unchanged. To avoid
  variable expansion, you can escape this syntax with $$"; "This field corresponds to the command
  field of the Kubernetes Containers v1 core API"). The training ``ContainerSpec`` and
  ``PythonPackageSpec`` comments do not mention expansion at all.
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

from vertex_emulator.core.config import EmulatorConfig
from vertex_emulator.runtime.cluster import Replica, expand_references
from vertex_emulator.runtime.driver import Interrupted, JobError
from vertex_emulator.runtime.packages import InstallInterrupted, PackageInstallError, install_packages

__all__ = ["check_hypertune", "pool_env", "replica_command"]

_PYTHON_RE = re.compile(r"python[0-9.]*")
_REDUCER_CODE = (
    "import signal\n"
    "print('emulated Reduction Server replica: accepted and idle; it performs no reduction', flush=True)\n"
    "signal.pause()\n"
)


def pool_env(rep: Replica) -> list[Mapping[str, Any]]:
    """The ``env`` list of replica ``rep``'s pool (its container or python package spec); none for a
    Reduction Server replica."""
    if rep.is_reducer:
        return []
    task = rep.spec.get("containerSpec") or rep.spec.get("pythonPackageSpec") or {}
    return list(task.get("env") or [])


def replica_command(
    rep: Replica,
    *,
    pool_field: str,
    config: EmulatorConfig,
    job_id: str,
    log_dir: Path,
    installed: dict[int, Path],
    stop: threading.Event,
    scope: Mapping[str, str],
    env: Mapping[str, str],
) -> tuple[list[str], Path | None]:
    """``(argv, a directory for PYTHONPATH or None)`` for replica ``rep``.

    ``scope`` is what a ``$(NAME)`` in the spec's command and args may name: the pool's expanded
    ``env`` and the service's variables (``cluster.service_scope``). ``installed`` maps pool
    index -> installed packages directory, shared by the replicas of one job (a pool's packages are
    installed once, with ``env``: the clean environment of the pool's first replica). Raises
    ``JobError`` for a spec that cannot run and ``Interrupted`` when
    ``stop`` is set during a package install.
    """
    spec = rep.spec
    if rep.is_reducer:
        return [sys.executable, "-S", "-c", _REDUCER_CODE], None

    def expanded(values: Any) -> list[str]:
        return [expand_references(str(a), scope) for a in values or []]

    container = spec.get("containerSpec")
    package = spec.get("pythonPackageSpec")
    if container:
        command = expanded(container.get("command"))
        args = expanded(container.get("args"))
        image = str(container.get("imageUri", ""))
        if command:
            return command + args, None
        prefix = config.image_map.get(image)
        if not prefix:
            raise JobError(
                3,
                f"{pool_field}.containerSpec: image {image!r} gives no command and the emulator has no "
                "image map entry for it (add one with --image-map IMAGE=COMMAND, or set command)",
            )
        return list(prefix) + args, None
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
                    env=env,
                    stop=stop,
                )
            except InstallInterrupted:
                raise Interrupted from None
            except PackageInstallError as exc:
                raise JobError(3, str(exc)) from None
        executor = str(package.get("executorImageUri", ""))
        prefix = list(config.image_map.get(executor) or [sys.executable])
        return prefix + ["-m", module] + expanded(package.get("args")), installed[rep.pool]
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
