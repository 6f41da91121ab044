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
* ``package-uris-gcs``: ``PythonPackageSpec.package_uris``: "Required. The Google Cloud Storage location
  of the Python package files which are the training program and its dependent packages": each is a
  ``gs://`` URI (a local path, an ``https://`` URL or a bare file name is not a Cloud Storage location).
* ``python-module``: "The Python module name to run after installing the packages": dotted identifiers.
* ``env-name``: ``EnvVar.name``: "Must be a valid C identifier."
* ``env-count``: ``ContainerSpec.env`` / ``PythonPackageSpec.env``: "Maximum limit is 100."
* ``env-apostrophe``: the service refused an env value holding an apostrophe with "Env vars cannot
  contain any unescaped apostrophe character '" (quoted in PrefectHQ/prefect issue 5940); ``\\'`` is
  the escaped form. Not in Google's documentation: a reported behaviour.
* ``nul``: no NUL character in what becomes a replica's command line or environment -- the container's
  ``command`` and ``args``, a package's ``args`` and ``python_module``, environment variable values (a
  name is a C identifier: ``env-name``) -- nor in the image and package URIs that name what runs. A
  process receives its arguments and environment as NUL-terminated strings (POSIX ``execve``: "argv is
  an array of character pointers to null-terminated strings",
  https://pubs.opengroup.org/onlinepubs/9799919799/functions/exec.html), so such a string cannot reach
  it. Vertex AI's own answer (a refusal at Create, or a replica that fails to start) is not documented:
  this is the emulator's reading, which refuses at Create rather than fail the job later.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from vertex_emulator.rules._common import problem

__all__ = [
    "MAX_ENV",
    "MAX_PACKAGE_URIS",
    "NUL_RULE",
    "PREBUILT_TRAINING_IMAGE",
    "nul_problems",
    "task_problems",
]

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
NUL_RULE = "must not contain a NUL character (a process argument or environment string cannot hold one)"


def nul_problems(values: Iterable[str], path: str, *, indexed: bool = True) -> list[str]:
    """A problem for each of ``values`` holding a NUL, named ``path[i]`` (or ``path`` when not
    ``indexed``: a single string)."""
    return [
        problem(f"{path}[{index}]" if indexed else path, NUL_RULE)
        for index, value in enumerate(values)
        if "\x00" in value
    ]


def _env_problems(env: Any, path: str) -> list[str]:
    out: list[str] = []
    if len(env) > MAX_ENV:
        out.append(problem(path, f"at most {MAX_ENV} environment variables are allowed (got {len(env)})"))
    for index, var in enumerate(env):
        out.extend(nul_problems([var.value], f"{path}[{index}].value", indexed=False))
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
        container = pool.container_spec
        where = f"{path}.container_spec"
        out = nul_problems([container.image_uri], f"{where}.image_uri", indexed=False)
        out.extend(nul_problems(container.command, f"{where}.command"))
        out.extend(nul_problems(container.args, f"{where}.args"))
        out.extend(_env_problems(container.env, f"{where}.env"))
        return out
    if task != "python_package_spec":
        return []
    spec = pool.python_package_spec
    where = f"{path}.python_package_spec"
    out = nul_problems([spec.executor_image_uri], f"{where}.executor_image_uri", indexed=False)
    out.extend(nul_problems(spec.args, f"{where}.args"))
    image = spec.executor_image_uri
    if image and "\x00" not in image and not PREBUILT_TRAINING_IMAGE.fullmatch(image):
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
    for index, uri in enumerate(spec.package_uris):
        if "\x00" in uri:
            out.append(problem(f"{where}.package_uris[{index}]", NUL_RULE))
        elif uri and not uri.startswith("gs://"):
            out.append(
                problem(
                    f"{where}.package_uris[{index}]",
                    f"must be the Cloud Storage location of a package file, gs://BUCKET/PATH (got {uri!r})",
                )
            )
    if "\x00" in spec.python_module:
        out.append(problem(f"{where}.python_module", NUL_RULE))
    elif spec.python_module and not _MODULE.fullmatch(spec.python_module):
        out.append(
            problem(
                f"{where}.python_module",
                f"must be a Python module name such as trainer.task (got {spec.python_module!r})",
            )
        )
    out.extend(_env_problems(spec.env, f"{where}.env"))
    return out
