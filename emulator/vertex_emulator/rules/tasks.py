"""Rules on what a pool runs: a custom container (v1 ``ContainerSpec``) or a Python package on a
prebuilt image (v1 ``PythonPackageSpec``), and their environment variables (v1 ``EnvVar``).

* ``executor-image``: ``PythonPackageSpec.executor_image_uri``: "The URI of a container image in
  Artifact Registry that will run the provided Python package. [...] See the list of pre-built
  containers for training. You must use an image from this list." The list ("Prebuilt containers for
  custom training", whose images are tabled on "Supported frameworks list") gives every image in three
  Artifact Registry multi-regions: ``us-docker.pkg.dev/vertex-ai/training/<image>:latest``,
  ``europe-docker.pkg.dev/...`` and ``asia-docker.pkg.dev/...``. The image names change with every
  framework release, so the emulator checks the repository (any image, tag or digest in it), not a
  frozen list of names. Locally the package still runs on the host (``replica_command``).
* ``package-uris``: "The maximum number of package URIs is 100."
* ``python-module``: "The Python module name to run after installing the packages": dotted identifiers.
* ``env-name``: ``EnvVar.name``: "Must be a valid C identifier."
* ``env-count``: ``ContainerSpec.env`` / ``PythonPackageSpec.env``: "Maximum limit is 100."
* ``env-apostrophe``: the service refused an env value holding an apostrophe with "Env vars cannot
  contain any unescaped apostrophe character '" (quoted in PrefectHQ/prefect issue 5940); ``\\'`` is
  the escaped form. Not in Google's documentation: a reported behaviour.
"""

from __future__ import annotations

import re
from typing import Any

from vertex_emulator.rules._common import problem

__all__ = ["MAX_ENV", "MAX_PACKAGE_URIS", "PREBUILT_TRAINING_IMAGE", "task_problems"]

MAX_ENV = 100
MAX_PACKAGE_URIS = 100
#: Any image of the prebuilt training containers' repository, in its three multi-regions.
PREBUILT_TRAINING_IMAGE = re.compile(
    r"(us|europe|asia)-docker\.pkg\.dev/vertex-ai/training/[a-z0-9]([a-z0-9._-]*[a-z0-9])?"
    r"(:[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})?"
)
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_UNESCAPED_APOSTROPHE = re.compile(r"(?<!\\)'")


def _env_problems(env: Any, path: str) -> list[str]:
    out: list[str] = []
    if len(env) > MAX_ENV:
        out.append(problem(path, f"at most {MAX_ENV} environment variables are allowed (got {len(env)})"))
    for index, var in enumerate(env):
        if var.name and not _C_IDENTIFIER.fullmatch(var.name):
            out.append(problem(f"{path}[{index}].name", f"must be a valid C identifier (got {var.name!r})"))
        if _UNESCAPED_APOSTROPHE.search(var.value):
            out.append(
                problem(
                    f"{path}[{index}].value", "Env vars cannot contain any unescaped apostrophe character '"
                )
            )
    return out


def task_problems(pool: Any, path: str) -> list[str]:
    """The rules of a raw ``WorkerPoolSpec``'s task (its container or package spec)."""
    task = pool.WhichOneof("task")
    if task == "container_spec":
        return _env_problems(pool.container_spec.env, f"{path}.container_spec.env")
    if task != "python_package_spec":
        return []
    spec = pool.python_package_spec
    where = f"{path}.python_package_spec"
    out: list[str] = []
    image = spec.executor_image_uri
    if image and not PREBUILT_TRAINING_IMAGE.fullmatch(image):
        out.append(
            problem(
                f"{where}.executor_image_uri",
                "must be one of Vertex AI's prebuilt training containers "
                '({us,europe,asia}-docker.pkg.dev/vertex-ai/training/IMAGE:TAG, see "Prebuilt containers '
                f'for custom training"); got {image!r}',
            )
        )
    if len(spec.package_uris) > MAX_PACKAGE_URIS:
        out.append(
            problem(
                f"{where}.package_uris",
                f"at most {MAX_PACKAGE_URIS} package URIs are allowed (got {len(spec.package_uris)})",
            )
        )
    if spec.python_module and not _MODULE.fullmatch(spec.python_module):
        out.append(
            problem(
                f"{where}.python_module",
                f"must be a Python module name such as trainer.task (got {spec.python_module!r})",
            )
        )
    out.extend(_env_problems(spec.env, f"{where}.env"))
    return out
