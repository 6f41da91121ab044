"""Regular expressions compiled on first use.

A module-level ``re.compile`` runs when the module is imported, and a DAG file that imports the
specs and operators would compile some thirty patterns it mostly never uses. ``LazyRegex``
compiles its pattern the first time it matches (once per process, then keeps it); it offers the
``re.Pattern`` methods the package uses. Pure standard library.
"""

from __future__ import annotations

import re

__all__ = ["LazyRegex"]


class LazyRegex:
    """``re.compile(pattern, flags)``, deferred until the first ``match``/``fullmatch``/``search``/``sub``."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def match(self, string: str) -> re.Match[str] | None:
        return self.compiled.match(string)

    def fullmatch(self, string: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(string)

    def search(self, string: str) -> re.Match[str] | None:
        return self.compiled.search(string)

    def sub(self, repl: str, string: str) -> str:
        return self.compiled.sub(repl, string)

    def __repr__(self) -> str:
        return f"LazyRegex({self.pattern!r})"
