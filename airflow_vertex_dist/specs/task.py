"""Tasks: what a pool's replicas run, a custom container (v1 ``ContainerSpec``) or a Python package
on a prebuilt image (v1 ``PythonPackageSpec``)."""

# No ``from __future__ import annotations`` in the modules that define spec models, unlike the rest of
# the package: with it, pydantic compiles and evaluates every field's annotation string when the model
# classes are created, on every DAG parse -- about a fifth of this package's parse cost (some 20 M of
# 115 M instructions for the benchmark's DAG file). Forward references are quoted instead.

from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationInfo, field_validator

from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.specs._base import SpecModel, defers_jinja, fail, is_template
from airflow_vertex_dist.specs._checks import nonblank

__all__ = ["Container", "PythonPackage"]

_ENV_NAME_RE = LazyRegex(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODULE_RE = LazyRegex(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
#: Vertex AI's prebuilt training containers: any image, tag or digest of their Artifact Registry
#: repository in its three multi-regions ("Prebuilt containers for custom training").
_PREBUILT_TRAINING_RE = LazyRegex(
    r"^(us|europe|asia)-docker\.pkg\.dev/vertex-ai/training/[a-z0-9]([a-z0-9._-]*[a-z0-9])?"
    r"(:[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})?$"
)


def _check_env(env: Mapping[str, str]) -> None:
    if len(env) > 100:
        fail(f"env: at most 100 variables are allowed (got {len(env)}); pass the rest as args or in a file")
    for name, value in env.items():
        if not _ENV_NAME_RE.match(name):
            fail(
                f"env: variable name must be a C identifier ([A-Za-z_][A-Za-z0-9_]*) (got {name!r}); "
                "rename it"
            )
        if value == "":
            fail(
                f"env: {name}: the value is required (the v1 EnvVar reference marks it Required); give it a "
                "value, or leave the variable out"
            )


def _env_to_api(env: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in env.items()]


class Container(SpecModel):
    """A custom container task (v1 ``ContainerSpec``). ``env`` keeps its order: a value may refer
    to an earlier variable as ``$(NAME)``."""

    image_uri: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("image_uri")
    @classmethod
    def _image(cls, value: str, info: ValidationInfo) -> str:
        if is_template(value) and defers_jinja(info):
            return value  # judged once rendered
        return nonblank("image_uri", value)

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        _check_env(value)
        return value

    @property
    def label(self) -> str:
        return self.image_uri

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"imageUri": self.image_uri}
        if self.command:
            out["command"] = list(self.command)
        if self.args:
            out["args"] = list(self.args)
        if self.env:
            out["env"] = _env_to_api(self.env)
        return out


class PythonPackage(SpecModel):
    """A Python package task run by a prebuilt executor image (v1 ``PythonPackageSpec``).

    ``executor_image_uri`` is one of Vertex AI's prebuilt training containers (the v1 reference: "You
    must use an image from this list"): ``{us,europe,asia}-docker.pkg.dev/vertex-ai/training/IMAGE:TAG``,
    e.g. ``us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest``. A custom image runs as a
    ``Container`` instead.
    """

    executor_image_uri: str
    package_uris: tuple[str, ...]
    python_module: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("executor_image_uri")
    @classmethod
    def _image(cls, value: str) -> str:
        nonblank("executor_image_uri", value)
        if not _PREBUILT_TRAINING_RE.match(value):
            fail(
                "executor_image_uri: must be one of Vertex AI's prebuilt training containers "
                '({us,europe,asia}-docker.pkg.dev/vertex-ai/training/IMAGE:TAG, listed on "Prebuilt '
                f'containers for custom training") (got {value!r}); pick one, or run a custom image as '
                "container=Container(...)"
            )
        return value

    @field_validator("package_uris")
    @classmethod
    def _uris(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        if not value:
            fail(
                "package_uris: at least one package URI is required; add the gs:// URI of your package's "
                "sdist"
            )
        if len(value) > 100:
            fail(
                f"package_uris: at most 100 package URIs are allowed (got {len(value)}); bundle them into "
                "fewer"
            )
        defer = defers_jinja(info)
        for uri in value:
            if defer and is_template(uri):
                continue  # judged once rendered
            nonblank("package_uris", uri)
            if not uri.startswith("gs://"):
                # v1 PythonPackageSpec.package_uris: "The Google Cloud Storage location of the Python
                # package files"
                fail(
                    f"package_uris: each must be the Cloud Storage location of a package file, "
                    f"gs://BUCKET/PATH (got {uri!r}); upload the package to Cloud Storage and give its "
                    "gs:// URI"
                )
        return value

    @field_validator("python_module")
    @classmethod
    def _module(cls, value: str) -> str:
        if not _MODULE_RE.match(value):
            fail(f"python_module: must be a dotted Python module name such as 'trainer.task' (got {value!r})")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        _check_env(value)
        return value

    @property
    def label(self) -> str:
        return f"{self.python_module} @ {self.executor_image_uri}"

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "executorImageUri": self.executor_image_uri,
            "packageUris": list(self.package_uris),
            "pythonModule": self.python_module,
        }
        if self.args:
            out["args"] = list(self.args)
        if self.env:
            out["env"] = _env_to_api(self.env)
        return out
