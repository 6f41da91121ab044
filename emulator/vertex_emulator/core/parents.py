"""The ``parent`` of a List or Create request: a location's resource name,
``projects/PROJECT/locations/LOCATION``, the same rule for every service the emulator serves."""

from __future__ import annotations

import re

from vertex_emulator.core.errors import ApiError

__all__ = ["PARENT_RE", "check_parent"]

PARENT_RE = re.compile(r"projects/[^/]+/locations/[^/]+")


def check_parent(parent: str) -> None:
    """``ApiError`` INVALID_ARGUMENT unless ``parent`` is a location's resource name."""
    if not PARENT_RE.fullmatch(parent):
        raise ApiError(
            "INVALID_ARGUMENT",
            f"parent: {parent!r} is not a location resource name "
            "(expected projects/PROJECT/locations/LOCATION)",
        )
