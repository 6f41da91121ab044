"""The package version, from one place: the installed distribution's metadata (``pyproject.toml``'s
``version``, written into the metadata by the build). The provider info and the client user agent read it
here, so no second copy of the number exists in the code."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

__all__ = ["DISTRIBUTION", "package_version"]

#: The distribution name (``[project] name`` in pyproject.toml).
DISTRIBUTION = "airflow-vertex-dist"


@cache
def package_version() -> str:
    """The installed version of ``DISTRIBUTION``; ``"0+unknown"`` when the package runs from a
    source tree that was never installed (no metadata to read)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"
