"""The lexical side of the emulator's Cloud Logging filters (query.py): the cursor both filter languages
share (core/filtering) in Cloud Logging's lexicon, which skips spaces and ``--`` comments and reads
quoted strings, bare words, keywords and operators, and the field paths the emulator filters on. Every
error is a ``LogFilterError`` naming the position and the rule.
"""

from __future__ import annotations

from vertex_emulator.core.filtering import Cursor, FilterSyntaxError, Lexicon

__all__ = [
    "OPERATOR_CHARS",
    "TIME_FIELDS",
    "LogFilterError",
    "Scanner",
    "check_field",
    "field_name",
]

_OPERATORS = ("<=", ">=", "!=", "=~", "!~", "=", "<", ">", ":")
_SPACES = frozenset(" \t\r\n")
_STOP = _SPACES | frozenset("()\"'")
OPERATOR_CHARS = frozenset("=<>!:")
_FIELD_STOP = _STOP | OPERATOR_CHARS | frozenset(".")
TIME_FIELDS = frozenset({"timestamp", "receiveTimestamp"})
_PLAIN_FIELDS = frozenset({"severity", "logName", "insertId", "textPayload", "resource.type"})
_MAP_PREFIXES = ("resource.labels.", "labels.", "jsonPayload.")


class LogFilterError(FilterSyntaxError):
    """A filter that does not parse or uses an unsupported field, operator or function."""

    def __init__(self, text: str, pos: int, rule: str) -> None:
        super().__init__(text, pos, rule, f"filter: {rule} (at character {pos + 1} of {text[:80]!r})")


#: Cloud Logging's text: spaces are the ASCII ones, ``--`` starts a comment to the end of the line, and
#: the operators include the regular expression ones (``=~``, ``!~``, refused by the parser by name).
_LEXICON = Lexicon(error=LogFilterError, operators=_OPERATORS, is_space=_SPACES.__contains__, comments=True)


class Scanner(Cursor):
    """A cursor over the filter ``text`` in Cloud Logging's lexicon: each read skips spaces and comments
    first."""

    __slots__ = ()

    def __init__(self, text: str, pos: int = 0) -> None:
        super().__init__(text, _LEXICON, pos)

    def value(self, what: str) -> tuple[str, int]:
        """A quoted or bare value at the cursor and where it starts (``what`` names it in the error)."""
        return self.literal(f"{what} needs a value")


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
