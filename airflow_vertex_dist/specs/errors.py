"""The one formatter of spec errors: ``path: rule`` lines, the closest valid field for an unknown one.

Every place a spec error surfaces uses it: a spec model built in Python or validated from a dict
(``SpecValidationError``, raised by the spec models themselves), the operators' templated spec
field (``operators/spec_field.py``), the CLI's ``render`` and the emulator's Create.

A line is ``<path>: <rule>``: ``primary.machine.acelerator_count: unknown field (did you mean
accelerator_count?)``, ``study.parameters[0].min_value: ...``; a built-in pydantic rule also quotes
the value it refused: ``scheduling.strategy: Input should be 'STANDARD', ... (got 'CHEAP')``.
"""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError
from pydantic_core.core_schema import ErrorType

from airflow_vertex_dist.common.regex import LazyRegex
from airflow_vertex_dist.specs._fields import fields_at

__all__ = [
    "SpecValidationError",
    "did_you_mean",
    "error_lines",
    "error_text",
    "unknown_field_rule",
]

_RULE_PATH = LazyRegex(
    r"^(?P<path>[A-Za-z_][A-Za-z0-9_]*(?:[./][A-Za-z0-9_]+|\[\d+\])*): (?P<rule>.+)$", re.S
)

#: the suffix ``from_api`` gives a v1 body's unknown key whose snake_case form is a spec field's name
_NOT_A_BODY_FIELD = " (unknown field)"

_KNOWN_TYPES = frozenset(typing.get_args(ErrorType))


def did_you_mean(name: str, known: Iterable[str]) -> str | None:
    """The one of ``known`` closest to a misspelt ``name`` (``difflib``'s ratio at least 0.6), or ``None``."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_field_rule(name: str, known: list[str]) -> str:
    """``unknown field (did you mean <closest>?)``, or the known fields when none is close."""
    close = did_you_mean(name, known)
    if close:
        return f"unknown field (did you mean {close}?)"
    return f"unknown field (known: {', '.join(known)})" if known else "unknown field"


def _join(root: str, loc: tuple[int | str, ...]) -> str:
    out = root
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _model_named(title: str) -> type[BaseModel] | None:
    """The spec model called ``title`` (pydantic titles a model's ValidationError with its name)."""
    from airflow_vertex_dist import specs

    found = getattr(specs, title, None)
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def error_lines(exc: ValidationError, *, root: str = "", model: type[BaseModel] | None = None) -> list[str]:
    """One ``path: rule`` line per error of a spec ``ValidationError``, each path under ``root``.

    Pydantic locates an error at the model that raised it; the spec's own rules start with the field
    path relative to that model (``"reduction_server: ..."``), joined here to the location:
    ``("primary", "machine")`` + ``"accelerator_count: ..."`` -> ``primary.machine.accelerator_count``.
    An unknown field names the closest valid one of ``model`` (the model that raised ``exc``; by
    default the spec model named by the error's title).
    """
    owner = model if model is not None else getattr(exc, "model", None) or _model_named(exc.title)
    lines = []
    for error in exc.errors(include_url=False):
        message = str(error["msg"])
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        loc = tuple(error["loc"])
        if error["type"] == "extra_forbidden" and loc:
            known, where = fields_at(owner, loc[:-1]) if owner is not None else ([], loc[:-1])
            name = str(loc[-1])
            if name.endswith(
                _NOT_A_BODY_FIELD
            ):  # a v1 body's key named like a spec field (_api.unknown_keys)
                rule = "unknown field (not a field of the v1 request body)"
                name = name.removesuffix(_NOT_A_BODY_FIELD)
            else:
                rule = unknown_field_rule(name, known)
            lines.append(f"{_join(root, (*where, name))}: {rule}")
            continue
        if owner is not None:
            loc = fields_at(owner, loc)[
                1
            ]  # without the union tags: parameters[0].double.x -> parameters[0].x
        named = _RULE_PATH.match(message)
        if named:
            # Our rules name their field relative to the model that raised them: anchor that path.
            first = re.split(r"[./\[]", named["path"], maxsplit=1)[0]
            base = loc[:-1] if loc and loc[-1] == first else loc
            lines.append(f"{_join(_join(root, base), (named['path'],))}: {named['rule']}")
            continue
        got = error.get("input")
        shown = error["type"] not in ("missing", "vertex_spec_rule", "value_error", "assertion_error")
        plain = not isinstance(got, Mapping | list | tuple | BaseModel)
        suffix = f" (got {got!r})" if shown and plain and got is not None else ""
        at = _join(root, loc)
        lines.append(f"{at}: {message}{suffix}" if at else f"{message}{suffix}")
    return lines


def error_text(
    exc: ValidationError, *, root: str = "", when: str = "", model: type[BaseModel] | None = None
) -> str:
    """``invalid <Model> spec<when>:`` and one indented ``path: rule`` line per error."""
    lines = error_lines(exc, root=root, model=model)
    return "\n".join([f"invalid {exc.title} spec{when}:", *("  " + line for line in lines)])


class SpecValidationError(ValidationError):
    """The ``ValidationError`` of a spec model: its text is the project's ``path: rule`` lines
    (``str(exc)``), its ``errors()`` pydantic's own, so ``except ValidationError`` still catches it."""

    model: type[BaseModel] | None = None

    def __str__(self) -> str:
        return error_text(self, model=self.model)

    @classmethod
    def of(cls, exc: ValidationError, model: type[BaseModel] | None = None) -> SpecValidationError:
        """``exc`` as a ``SpecValidationError``: the same errors, ``model`` the model that raised it."""
        if isinstance(exc, cls):
            return exc
        details: list[Any] = []
        for error in exc.errors(include_url=False):
            detail: dict[str, Any] = {"loc": error["loc"], "input": error.get("input")}
            ctx = error.get("ctx")
            if error["type"] in _KNOWN_TYPES:
                detail["type"] = error["type"]
                if ctx is not None:
                    detail["ctx"] = ctx
            else:  # a custom error keeps its type and text; its context is spent in the text
                detail["type"] = PydanticCustomError(error["type"], "{rule}", {"rule": error["msg"]})
            details.append(detail)
        try:
            out = cls.from_exception_data(exc.title, details)
        except (TypeError, ValueError, KeyError):
            # a known error type whose context does not round-trip: keep its text as a custom error
            details = [
                {**d, "type": PydanticCustomError(e["type"], "{rule}", {"rule": e["msg"]})}
                for d, e in zip(details, exc.errors(include_url=False), strict=True)
            ]
            for d in details:
                d.pop("ctx", None)
            out = cls.from_exception_data(exc.title, details)
        out.model = model
        return out

    @classmethod
    def raise_rule(cls, title: str, loc: tuple[str | int, ...], rule: str, value: Any) -> typing.NoReturn:
        """Raise one error at ``loc`` whose text is ``rule``."""
        detail: Any = {
            "type": PydanticCustomError("vertex_spec_rule", "{rule}", {"rule": rule}),
            "loc": loc,
            "input": value,
        }
        raise cls.from_exception_data(title, [detail])
