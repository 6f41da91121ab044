"""The cursor both filter languages read their text with (see the package doc).

Every read is one left-to-right pass: no step looks back, and none builds a regular expression from the
filter's text, so a hostile filter costs time linear in its length.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Cursor", "FilterSyntaxError", "Lexicon"]

_QUOTES = ('"', "'")
#: what ends a bare value besides a space
_VALUE_END = frozenset("()")
#: what ends a keyword besides a space: a parenthesis or a quote (``AND`` but not ``ANDROID``)
_KEYWORD_END = frozenset("()\"'")


class FilterSyntaxError(ValueError):
    """A filter that cannot be read: the filter's ``text``, the position ``pos`` and the ``rule``.

    Each language words its message in its own way (its subclass); the fields are the same."""

    def __init__(self, text: str, pos: int, rule: str, message: str) -> None:
        self.text, self.pos, self.rule = text, pos, rule
        super().__init__(message)


@dataclass(frozen=True)
class Lexicon:
    """What a language's text is made of, where the two languages differ."""

    #: builds the language's error from (text, position, rule)
    error: Callable[[str, int, str], FilterSyntaxError]
    #: the comparison operators, longest first where one is a prefix of another
    operators: tuple[str, ...]
    #: which characters separate tokens
    is_space: Callable[[str], bool] = str.isspace
    #: whether ``--`` starts a comment that runs to the end of the line
    comments: bool = False


class Cursor:
    """A position in a filter's ``text``: each read skips spaces (and comments) first."""

    __slots__ = ("lexicon", "pos", "text")

    def __init__(self, text: str, lexicon: Lexicon, pos: int = 0) -> None:
        self.text, self.lexicon, self.pos = text, lexicon, pos

    def skip_space(self) -> None:
        text, n, is_space = self.text, len(self.text), self.lexicon.is_space
        while self.pos < n:
            if is_space(text[self.pos]):
                self.pos += 1
            elif self.lexicon.comments and text.startswith("--", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            else:
                return

    def at_end(self) -> bool:
        self.skip_space()
        return self.pos >= len(self.text)

    def peek(self) -> str:
        """The next character after spaces, or ``""`` at the end."""
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def error(self, rule: str, pos: int | None = None) -> FilterSyntaxError:
        return self.lexicon.error(self.text, self.pos if pos is None else pos, rule)

    def quoted(self) -> str:
        """The string quoted at the cursor, unescaped; an unterminated one is an error at its quote."""
        text, n = self.text, len(self.text)
        quote, start = text[self.pos], self.pos
        self.pos += 1
        out: list[str] = []
        while self.pos < n:
            ch = text[self.pos]
            if ch == "\\" and self.pos + 1 < n:
                out.append(text[self.pos + 1])
                self.pos += 2
                continue
            if ch == quote:
                self.pos += 1
                return "".join(out)
            out.append(ch)
            self.pos += 1
        raise self.error("unterminated quoted string", start)

    def bare(self, stop: frozenset[str]) -> str:
        """The characters from the cursor up to the first one in ``stop`` (possibly none)."""
        start, text, n = self.pos, self.text, len(self.text)
        while self.pos < n and text[self.pos] not in stop:
            self.pos += 1
        return text[start : self.pos]

    def word(self, stop: frozenset[str]) -> str:
        """The characters from the cursor up to the first space or one in ``stop`` (possibly none)."""
        start, text, n, is_space = self.pos, self.text, len(self.text), self.lexicon.is_space
        while self.pos < n and not is_space(text[self.pos]) and text[self.pos] not in stop:
            self.pos += 1
        return text[start : self.pos]

    def literal(self, missing: str) -> tuple[str, int]:
        """The value at the cursor, quoted or bare (up to a space or a parenthesis), and where it starts;
        none there is an error of rule ``missing``."""
        self.skip_space()
        pos = self.pos
        if self.peek() in _QUOTES:
            return self.quoted(), pos
        value = self.word(_VALUE_END)
        if not value:
            raise self.error(missing, pos)
        return value, pos

    def match(self, pattern: re.Pattern[str]) -> str | None:
        """``pattern`` matched at the cursor (consumed), or None."""
        found = pattern.match(self.text, self.pos)
        if found is None:
            return None
        self.pos = found.end()
        return found.group(0)

    def keyword(self, word: str) -> bool:
        """Consume ``word`` when it stands alone at the cursor (``AND`` but not ``ANDROID``)."""
        self.skip_space()
        text, end = self.text, self.pos + len(word)
        if text.startswith(word, self.pos) and (
            end >= len(text) or self.lexicon.is_space(text[end]) or text[end] in _KEYWORD_END
        ):
            self.pos = end
            return True
        return False

    def operator(self) -> str | None:
        """The comparison operator at the cursor (consumed), or None."""
        self.skip_space()
        for op in self.lexicon.operators:
            if self.text.startswith(op, self.pos):
                self.pos += len(op)
                return op
        return None
