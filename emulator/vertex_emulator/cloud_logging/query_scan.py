"""The lexical side of the emulator's Cloud Logging filters (query.py): a cursor over the filter's text
that skips spaces and ``--`` comments and reads quoted strings, bare words, keywords and operators, and
the field paths the emulator filters on. Every error is a ``LogFilterError`` naming the position and
the rule.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "OPERATOR_CHARS",
    "TIME_FIELDS",
    "LogFilterError",
    "Scanner",
    "check_field",
    "field_name",
]

_OPERATORS = ("<=", ">=", "!=", "=~", "!~", "=", "<", ">", ":")
_STOP = frozenset(" \t\r\n()\"'")
OPERATOR_CHARS = frozenset("=<>!:")
_FIELD_STOP = _STOP | OPERATOR_CHARS | frozenset(".")
_VALUE_STOP = frozenset(" \t\r\n()")
TIME_FIELDS = frozenset({"timestamp", "receiveTimestamp"})
_PLAIN_FIELDS = frozenset({"severity", "logName", "insertId", "textPayload", "resource.type"})
_MAP_PREFIXES = ("resource.labels.", "labels.", "jsonPayload.")


class LogFilterError(ValueError):
    """A filter that does not parse or uses an unsupported field, operator or function."""

    def __init__(self, text: str, pos: int, rule: str) -> None:
        self.pos = pos
        self.rule = rule
        super().__init__(f"filter: {rule} (at character {pos + 1} of {text[:80]!r})")


@dataclass
class Scanner:
    """A cursor over the filter ``text``: each read skips spaces and comments first."""

    text: str
    pos: int = 0

    def skip_space(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            if text[self.pos] in " \t\r\n":
                self.pos += 1
            elif text.startswith("--", self.pos):  # a comment, to the end of the line
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            else:
                return

    def at_end(self) -> bool:
        self.skip_space()
        return self.pos >= len(self.text)

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def error(self, rule: str, pos: int | None = None) -> LogFilterError:
        return LogFilterError(self.text, self.pos if pos is None else pos, rule)

    def quoted(self) -> str:
        quote = self.text[self.pos]
        start = self.pos
        self.pos += 1
        out: list[str] = []
        n = len(self.text)
        while self.pos < n:
            ch = self.text[self.pos]
            if ch == "\\" and self.pos + 1 < n:
                out.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            if ch == quote:
                self.pos += 1
                return "".join(out)
            out.append(ch)
            self.pos += 1
        raise self.error("unterminated quoted string", start)

    def bare(self, stop: frozenset[str]) -> str:
        start = self.pos
        n = len(self.text)
        while self.pos < n and self.text[self.pos] not in stop:
            self.pos += 1
        return self.text[start : self.pos]

    def value(self, what: str) -> tuple[str, int]:
        """A quoted or bare value at the cursor and where it starts."""
        self.skip_space()
        pos = self.pos
        if self.peek() in ('"', "'"):
            return self.quoted(), pos
        value = self.bare(_VALUE_STOP)
        if not value:
            raise self.error(f"{what} needs a value", pos)
        return value, pos

    def keyword(self, word: str) -> bool:
        """Consume ``word`` when it stands alone at the cursor (``AND`` but not ``ANDROID``)."""
        self.skip_space()
        end = self.pos + len(word)
        if self.text.startswith(word, self.pos) and (end >= len(self.text) or self.text[end] in _STOP):
            self.pos = end
            return True
        return False

    def operator(self) -> str | None:
        self.skip_space()
        for op in _OPERATORS:
            if self.text.startswith(op, self.pos):
                self.pos += len(op)
                return op
        return None


def field_name(scanner: Scanner) -> tuple[str, int]:
    """A field path: segments separated by ``.``, each bare or quoted. Returns (path, start)."""
    start = scanner.pos
    parts: list[str] = []
    stop = _FIELD_STOP
    while True:
        ch = scanner.text[scanner.pos] if scanner.pos < len(scanner.text) else ""
        if ch in ('"', "'"):
            parts.append(scanner.quoted())
        else:
            parts.append(scanner.bare(stop))
        if scanner.pos < len(scanner.text) and scanner.text[scanner.pos] == ".":
            scanner.pos += 1
            continue
        return ".".join(parts), start


def check_field(scanner: Scanner, path: str, pos: int) -> None:
    if path in _PLAIN_FIELDS or path in TIME_FIELDS:
        return
    for prefix in _MAP_PREFIXES:
        if path.startswith(prefix) and len(path) > len(prefix):
            return
    raise scanner.error(
        f"unsupported field {path!r}: the emulator filters on resource.type, resource.labels.KEY, "
        "labels.KEY, severity, timestamp, receiveTimestamp, logName, insertId, textPayload and "
        "jsonPayload.KEY",
        pos,
    )
