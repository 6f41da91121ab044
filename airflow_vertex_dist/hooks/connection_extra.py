"""Reading a connection's type and ``extra`` into ``VertexConnection``'s fields (the fields themselves
and their rules are in ``hooks.connection``): the connection types the hooks read, the prefixed keys
(``extra__vertex_dist__<field>``, ``extra__google_cloud_platform__<field>``) beside the plain ones, the
Google provider's field names, the Google provider fields refused when set, and errors naming
``<conn_id>.extra.<field>``.

Pure (pydantic only): no Google import.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from airflow_vertex_dist.hooks import CONN_TYPE

__all__ = [
    "CONN_TYPES",
    "GENERIC_CONN_TYPE",
    "GOOGLE_CONN_TYPE",
    "blank",
    "check_conn_type",
    "extra_names",
    "extra_problems",
    "fold_extra",
]

#: The Google provider's connection type, read as it is.
GOOGLE_CONN_TYPE = "google_cloud_platform"
#: What ``airflow connections add --conn-type google_cloud_platform`` stores when the Google provider is
#: not installed: the CLI replaces a connection type it does not know by ``generic`` (with a warning)
#: and keeps the extras.
GENERIC_CONN_TYPE = "generic"
#: The connection types the hooks read.
CONN_TYPES = (CONN_TYPE, GOOGLE_CONN_TYPE, GENERIC_CONN_TYPE)

_PREFIXES = tuple(f"extra__{kind}__" for kind in (CONN_TYPE, GOOGLE_CONN_TYPE))

#: The extra's name of a field, where it differs (the Google provider's ``scope``).
_ALIASES = {"scope": "scopes"}

_SECRET_MANAGER = (
    "a key kept in Secret Manager is not supported here; give key_path, keyfile_dict or "
    "credential_config_file, or keep the whole connection in a secrets backend"
)
_CLIENT_CREDENTIALS = (
    "the client credentials grant flow is not supported here; use credential_config_file (workload "
    "identity federation) instead"
)
#: Google provider fields this provider cannot honour, refused when set: the rule says what to use
#: instead. The Google provider's form saves them all (blank when unused): a blank one is ignored.
_UNSUPPORTED = {
    "key_secret_name": _SECRET_MANAGER,
    "key_secret_project_id": _SECRET_MANAGER,
    "idp_issuer_url": _CLIENT_CREDENTIALS,
    "client_id": _CLIENT_CREDENTIALS,
    "client_secret": _CLIENT_CREDENTIALS,
    "idp_extra_parameters": _CLIENT_CREDENTIALS,
}


def blank(value: Any) -> bool:
    """Whether an extra's value counts as not set: ``None``, or a string of white space only."""
    return value is None or (isinstance(value, str) and not value.strip())


def check_conn_type(conn_type: str | None, conn_id: str) -> None:
    """``ValueError`` naming ``<conn_id>.conn_type`` when ``conn_type`` is given and not one of
    ``CONN_TYPES``."""
    if conn_type and conn_type not in CONN_TYPES:
        raise ValueError(
            f"{conn_id}.conn_type: {conn_type!r} is not a connection these hooks read "
            f"(use {' or '.join(CONN_TYPES[:2])})"
        )


def extra_names(fields: Iterable[str]) -> list[str]:
    """The extra names of the model's ``fields`` (``scope`` for the ``scopes`` field)."""
    renamed = {field: key for key, field in _ALIASES.items()}
    return [renamed.get(name, name) for name in fields]


def fold_extra(extra: Mapping[str, Any], conn_id: str) -> tuple[dict[str, Any], list[str]]:
    """The field values of ``extra`` (prefixes dropped, the Google provider's names mapped), and the
    problems of the fields refused. A field given both plainly and with a prefix takes the plain value
    unless it is blank (the Google provider reads the plain key first, too)."""
    values: dict[str, Any] = {}
    plain: set[str] = set()
    problems: list[str] = []
    for key, value in extra.items():
        name = next((key[len(p) :] for p in _PREFIXES if key.startswith(p)), key)
        if name in _UNSUPPORTED:
            if not blank(value) and f"{conn_id}.extra.{name}: {_UNSUPPORTED[name]}" not in problems:
                problems.append(f"{conn_id}.extra.{name}: {_UNSUPPORTED[name]}")
            continue
        name = _ALIASES.get(name, name)
        if name in values and (blank(value) or (name in plain and not blank(values[name]))):
            continue  # a blank never hides a value; a set plain key wins over a prefixed one
        values[name] = value
        if name == _ALIASES.get(key, key):
            plain.add(name)
    return values, problems


def extra_problems(exc: ValidationError, conn_id: str, known: list[str]) -> list[str]:
    """``exc``'s errors as ``<conn_id>.extra.<field>: <rule>``, an unknown field with the closest
    ``known`` extra name and the list of them."""
    renamed = {field: key for key, field in _ALIASES.items()}
    problems = []
    for err in exc.errors(include_input=False):
        loc = ".".join(renamed.get(str(part), str(part)) for part in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            close = difflib.get_close_matches(loc, known, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            msg = f"unknown field ({hint}known: {', '.join(known)})"
        problems.append(f"{conn_id}.extra{'.' + loc if loc else ''}: {msg}")
    return problems
