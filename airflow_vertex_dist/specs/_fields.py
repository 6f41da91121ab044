"""What the spec models' fields are, at any path: for naming the closest valid field of an unknown one."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

__all__ = ["fields_at", "items_of", "models_in"]


def models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold directly (through Optional, unions, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        args = typing.get_args(annotation)[:1] if origin is typing.Annotated else typing.get_args(annotation)
        return [m for arg in args for m in models_in(arg)]
    return []


def items_of(annotation: Any) -> Any:
    """The item annotation of a tuple/list annotation (through Optional), else ``None``."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            item = items_of(arg)
            if item is not None:
                return item
        return None
    if origin in (tuple, list, set, frozenset):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return typing.Union[tuple(args)] if len(args) > 1 else (args[0] if args else None)  # noqa: UP007
    return None


def _tags(model: type[BaseModel]) -> set[Any]:
    """The values of ``model``'s literal fields: a discriminated union names its member by one."""
    return {
        value
        for field in model.model_fields.values()
        if typing.get_origin(field.annotation) is typing.Literal
        for value in typing.get_args(field.annotation)
    }


def fields_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> tuple[list[str], tuple[int | str, ...]]:
    """The field names of the (sub)model found at ``loc`` under ``model`` (empty when unknown), and
    ``loc`` without the union tags pydantic puts in it (``parameters[0].double.x`` -> ``parameters[0].x``)."""
    annotation: Any = model
    shown: list[int | str] = []
    for index, part in enumerate(loc):
        if isinstance(part, int):
            annotation = items_of(annotation)
            shown.append(part)
            continue
        models = models_in(annotation)
        named = [m for m in models if m.__name__ == part or part in _tags(m)]  # a union member's tag
        if named and len(models) > 1:
            annotation = named[0]
            continue
        found = [m.model_fields[part].annotation for m in models if part in m.model_fields]
        if not found:
            return [], (*shown, *loc[index:])
        annotation = found[0]
        shown.append(part)
    names: list[str] = []
    for m in models_in(annotation):
        names += [n for n in m.model_fields if n not in names]
    return names, tuple(shown)
