"""The parts an operator owns (its ``JobAttacher``, ``JobWait``, ``LadderWalk``, ``JobLogs``): ``owned_part``,
the descriptor that makes each on first use and keeps it bound to its operator.

A part holds its operator as ``host``. Airflow copies a task before it runs it (``copy.copy`` in
``prepare_for_execution``) and then renders the copy's templated fields: a part made on the original
would read the original's settings and its unrendered spec. So a part whose ``host`` is not the operator
it is read from is made again for that operator. ``copy.deepcopy`` and pickling keep each part bound
to its own operator (Airflow's ``BaseOperator.__deepcopy__`` copies with a memo), and DAG serialization
writes none of them (it writes the declared fields only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

__all__ = ["owned_part"]

T = TypeVar("T")
_MISSING = object()


class owned_part(Generic[T]):  # noqa: N801 -- named as functools.cached_property, which it replaces here
    """Like ``functools.cached_property``, for a part bound to its operator (see the module doc)."""

    def __init__(self, make: Callable[[Any], T]) -> None:
        self.make = make
        self.name = make.__name__
        self.__doc__ = make.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> owned_part[T]: ...
    @overload
    def __get__(self, obj: object, objtype: type | None = None) -> T: ...
    def __get__(self, obj: object | None, objtype: type | None = None) -> T | owned_part[T]:
        if obj is None:
            return self
        value: Any = obj.__dict__.get(self.name, _MISSING)
        if value is _MISSING or (value is not None and getattr(value, "host", obj) is not obj):
            value = self.make(obj)
            obj.__dict__[self.name] = value
        return value  # type: ignore[no-any-return]

    def __set__(self, obj: object, value: T) -> None:
        """Set the part (a data descriptor: ``__get__`` runs on every read, so a copy's check runs)."""
        obj.__dict__[self.name] = value
