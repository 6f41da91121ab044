"""The admin API of the emulator's state (app/state.py): snapshot, restore, reset, and the snapshots kept.

::

    POST   /emulator/state:snapshot          {"name": NAME, "replace": false}  -> the snapshot's summary
    POST   /emulator/state:restore           {"name": NAME}                    -> what was restored
    POST   /emulator/state:reset             {"keep_objects": false}           -> what was reset
    GET    /emulator/state/snapshots                                           -> {"snapshots": [...]}
    GET    /emulator/state/snapshots/NAME                                      -> its summary
    DELETE /emulator/state/snapshots/NAME                                      -> {}

A caller names a snapshot, never a path: the emulator places it under its state directory
(core/snapshots.py, where the name's rule is). These calls are checked like every other
(rest/handler.py ``_check_caller``): the emulator's own user, or the access token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from vertex_emulator.core.errors import ApiError
from vertex_emulator.core.snapshots import check_name

__all__ = ["PREFIX", "StateKeeper", "call"]

JsonBody = Callable[[], dict[str, Any]]
#: every path of this API begins so
PREFIX = "/emulator/state"
_SNAPSHOTS = f"{PREFIX}/snapshots"


class StateKeeper(Protocol):
    """What this API needs of the emulator's state (``app.state.EmulatorState``)."""

    def list(self) -> list[dict[str, Any]]: ...
    def delete(self, name: str) -> None: ...
    def snapshot(self, name: str, *, replace: bool = False) -> dict[str, Any]: ...
    def restore(self, name: str) -> dict[str, Any]: ...
    def reset(self, *, keep_objects: bool = False) -> dict[str, Any]: ...


def _fields(body: dict[str, Any], known: dict[str, type]) -> dict[str, Any]:
    """``body`` checked: only ``known`` fields, each of its type (INVALID_ARGUMENT naming the field)."""
    unknown = sorted(set(body) - set(known))
    if unknown:
        raise ApiError("INVALID_ARGUMENT", f"{unknown[0]}: unknown field (known: {', '.join(known)})")
    for field, kind in known.items():
        value = body.get(field)
        if value is not None and (
            not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))
        ):
            raise ApiError("INVALID_ARGUMENT", f"{field}: must be a {kind.__name__} (got {value!r})")
    return body


def _name(body: dict[str, Any]) -> str:
    name = body.get("name")
    if name is None:
        raise ApiError("INVALID_ARGUMENT", "name: required, the snapshot's name")
    return str(name)


def call(keeper: StateKeeper, method: str, path: str, json_body: JsonBody) -> dict[str, Any]:
    """Answer ``method path`` under ``PREFIX`` (NOT_FOUND for a path or method it does not serve)."""
    if method == "POST" and path == f"{PREFIX}:snapshot":
        body = _fields(json_body(), {"name": str, "replace": bool})
        return keeper.snapshot(_name(body), replace=bool(body.get("replace")))
    if method == "POST" and path == f"{PREFIX}:restore":
        return keeper.restore(_name(_fields(json_body(), {"name": str})))
    if method == "POST" and path == f"{PREFIX}:reset":
        body = _fields(json_body(), {"keep_objects": bool})
        return keeper.reset(keep_objects=bool(body.get("keep_objects")))
    if method in ("GET", "HEAD") and path in (_SNAPSHOTS, f"{_SNAPSHOTS}/"):
        return {"snapshots": keeper.list()}
    if path.startswith(f"{_SNAPSHOTS}/") and method in ("GET", "HEAD", "DELETE"):
        name = path[len(_SNAPSHOTS) + 1 :]
        if method == "DELETE":
            keeper.delete(name)
            return {}
        check_name(name)
        for summary in keeper.list():
            if summary.get("name") == name:
                return summary
        raise ApiError("NOT_FOUND", f"name: no snapshot named {name!r}")
    raise ApiError("NOT_FOUND", f"{method} {path}: no such resource on the Vertex AI emulator")
