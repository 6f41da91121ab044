"""The lexical side of the emulator's Cloud Logging filters (query.py): the cursor both filter languages
share (core/filtering) in Cloud Logging's lexicon, which skips spaces and ``--`` comments and reads
quoted strings, bare words, keywords and operators, and the field paths the emulator filters on; and
``LogSource``, the tokens the shared parser (core/filtering/parse.py) reads, as it goes. Every error is
a ``LogFilterError`` naming the position and the rule.
"""

from __future__ import annotations

from vertex_emulator.core.filtering import Cursor, FilterSyntaxError, Lexicon, Token

__all__ = [
    "OPERATOR_CHARS",
    "TIME_FIELDS",
    "LogFilterError",
    "LogSource",
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
_KEYWORDS = ("AND", "OR", "NOT")
_QUOTES = ('"', "'")
#: the reference's functions the emulator does not evaluate (named in the error)
_KNOWN_FUNCTIONS = frozenset({"sample", "search", "cast", "regex_extract", "ip_in_net"})


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


def check_field(path: str, op: str) -> str | None:
    """The rule ``path op`` breaks, checked before the value is read (None: none)."""
    if op in ("=~", "!~"):
        return "regular expressions (=~, !~) are not supported by the emulator"
    if path in _PLAIN_FIELDS or path in TIME_FIELDS:
        return None
    for prefix in _MAP_PREFIXES:
        if path.startswith(prefix) and len(path) > len(prefix):
            return None
    return (
        f"unsupported field {path!r}: the emulator filters on resource.type, resource.labels.KEY, "
        "labels.KEY, severity, timestamp, receiveTimestamp, logName, insertId, textPayload and "
        "jsonPayload.KEY"
    )


class LogSource:
    """The shared parser's tokens (core/filtering/parse.py ``Source``), read from the text as it parses:
    ``peek`` sees the structure (spaces and comments skipped, keywords only standing alone) and says
    only ``other`` where a field, a search term, a value or an operator starts, which the parser then
    asks for by what it expects there."""

    __slots__ = ("_at", "_tok", "restrictions", "s")

    def __init__(self, text: str) -> None:
        self.s = Scanner(text)
        self.restrictions = 0
        self._tok: Token | None = None
        self._at = 0  # where the last peek started (before spaces and comments)

    def peek(self) -> Token:
        s, tok = self.s, self._tok
        if tok is not None and self._at <= s.pos <= tok.pos:  # only spaces between: the token seen last
            s.pos = tok.pos
            return tok
        self._at = s.pos
        s.skip_space()
        pos = s.pos
        tok = Token("end", "", pos, pos)
        if pos < len(s.text):
            ch = s.text[pos]
            tok = Token(ch, ch, pos, pos + 1) if ch in "()-" else self._keyword(pos)
        self._tok = tok
        return tok

    def _keyword(self, pos: int) -> Token:
        if self.s.text[pos] not in "ANO":  # no keyword starts here
            return Token("other", self.s.text[pos], pos, pos)
        for word in _KEYWORDS:
            if self.s.keyword(word):
                end, self.s.pos = self.s.pos, pos
                return Token(word, word, pos, end)
        return Token("other", self.s.text[pos], pos, pos)

    def take(self) -> Token:
        tok = self.peek()
        self.s.pos = tok.end
        return tok

    def word(self) -> Token:
        """A field path or a search term, or a function call ``name(arg)``."""
        s = self.s
        ch = s.peek()
        if ch in OPERATOR_CHARS:
            raise s.error(f"expected a field or a search term before {ch!r}")
        path, pos = field_name(s)
        if path in _KEYWORDS:
            raise s.error(f"{path} needs a term on each side", pos)
        if ch not in _QUOTES and s.pos < len(s.text) and s.text[s.pos] == "(":
            return self._call(path, pos)
        return Token("word", path, pos, s.pos)

    def _call(self, name: str, pos: int) -> Token:
        s, key = self.s, name.casefold()
        if key != "log_id":
            which = "the function" if key in _KNOWN_FUNCTIONS else "the unknown function"
            raise s.error(f"{which} {name}() is not supported by the emulator (it supports log_id())", pos)
        s.pos += 1  # "("
        log_id, _ = s.value("log_id()")
        if s.peek() != ")":
            raise s.error("log_id() takes one log ID, then ')'")
        s.pos += 1
        return Token("call", name, pos, s.pos, value=log_id)

    def operator(self) -> Token:
        self.s.skip_space()
        pos = self.s.pos
        op = self.s.operator()
        if op is None:
            return Token("none", "", self.s.pos, self.s.pos)
        return Token("op", op, pos, self.s.pos)

    def value(self, what: str) -> Token:
        if self.s.peek() == "(":
            return self.peek()
        value, pos = self.s.value(what)
        return Token("value", value, pos, self.s.pos)

    def group_value(self, what: str) -> Token:
        value, pos = self.s.value(what)
        if value in ("AND", "OR"):
            raise self.s.error(f"{value} needs a value on each side", pos)
        return Token("value", value, pos, self.s.pos)
