"""The one parser of both filter languages (see the package doc): the boolean structure of AIP-160
(``AND``, ``OR``, ``NOT`` or ``-``, parentheses, juxtaposition, restrictions ``FIELD OP VALUE`` and bare
words) read from a language's token ``Source`` into a small tree (``And``, ``Or``, ``Not`` and ``Leaf``
nodes), with what differs between the languages taken from a ``Grammar``.

Each restriction is judged by the language's field table (``Grammar.leaf``) as soon as it is read, so
its errors come in reading order, and the leaf keeps what the table made of it (a predicate, a
``LogQuery``); ``fold`` then evaluates the tree bottom-up. Parentheses deeper than
``Grammar.max_depth`` are refused at the ``(`` before the parser recurses, so a hostile filter never
exhausts the stack, and every step reads forward: parsing is linear in the text's length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar, Union

from vertex_emulator.core.filtering.scan import FilterSyntaxError

__all__ = [
    "And",
    "Grammar",
    "Leaf",
    "Node",
    "Not",
    "Or",
    "Parser",
    "Restriction",
    "Source",
    "Token",
    "TokenList",
    "fold",
    "parse",
]

L = TypeVar("L")
R = TypeVar("R")


class Token(NamedTuple):
    """One token: ``kind`` is ``(``, ``)``, ``-``, ``AND``, ``OR``, ``NOT``, ``end``, ``word`` (a field or
    a bare word), ``call`` (a function and its argument ``value``), ``op``, ``value``, or ``other`` (a
    source that reads words only when asked says only that one starts here)."""

    kind: str
    text: str
    pos: int
    #: where the token ends (the position after it)
    end: int = -1
    #: a ``call``'s argument
    value: str = ""


class Restriction(NamedTuple):
    """``field op value`` as written: ``op`` is None for a bare word (AIP-160's global restriction) and
    ``"()"`` for a function call ``field(value)``; ``op_pos`` is where the operator is (or where one was
    expected), ``value_pos`` where the value starts."""

    field: str
    op: str | None
    value: str
    pos: int
    op_pos: int
    value_pos: int


@dataclass
class Leaf(Generic[L]):
    restriction: Restriction
    #: what the language's field table made of the restriction
    meaning: L


@dataclass
class And(Generic[L]):
    parts: tuple[Node[L], ...]


@dataclass
class Or(Generic[L]):
    parts: tuple[Node[L], ...]


@dataclass
class Not(Generic[L]):
    inner: Node[L]


Node = Union[Leaf[L], And[L], Or[L], Not[L]]  # noqa: UP007 - a generic alias needs Union before 3.12


class Source(Protocol):
    """Where the parser's tokens come from: read as the parser goes (Cloud Logging) or the whole text
    tokenized first (``TokenList``, the List filter: a late token error wins over an earlier parse
    error). ``peek`` and ``take`` see the structure; the others read what the parser asks for."""

    #: the operators the source already counted (a source that tokenized the whole text), else 0
    restrictions: int

    def peek(self) -> Token: ...

    def take(self) -> Token: ...

    def word(self) -> Token:
        """The ``word`` or ``call`` at a term's position (consumed)."""

    def operator(self) -> Token:
        """The ``op`` token at the cursor (consumed), or the next token (not consumed)."""

    def value(self, what: str) -> Token:
        """The ``value`` after an operator (consumed), or a ``(`` that opens a value group (not
        consumed); ``what`` (``field`` and operator) names it in an error."""

    def group_value(self, what: str) -> Token:
        """A ``value`` inside a value group (consumed)."""


class TokenList:
    """A ``Source`` over a text tokenized whole (which ends with an ``end`` token)."""

    __slots__ = ("i", "restrictions", "tokens")

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens, self.i = tokens, 0
        self.restrictions = sum(1 for tok in tokens if tok.kind == "op")

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def word(self) -> Token:
        return self.take()

    def operator(self) -> Token:
        return self.take() if self.peek().kind == "op" else self.peek()

    def value(self, what: str) -> Token:
        return self.take()

    def group_value(self, what: str) -> Token:
        return self.take()


def _anything_but_the_end(tok: Token) -> bool:
    return tok.kind not in ("end", ")")


@dataclass(frozen=True)
class Grammar(Generic[L]):
    """What differs between the languages' structure, and the language's field table."""

    #: builds the language's error from (text, position, rule)
    error: Callable[[str, int, str], FilterSyntaxError]
    #: the field table: what one restriction means (``leaf(text, restriction)``), or its error
    leaf: Callable[[str, Restriction], L]
    #: the rule when a token stands where a term should (``(``, a field or a bare word)
    unexpected: Callable[[Token], str]
    max_chars: int
    #: the rule of a filter longer than ``max_chars`` (refused at that position)
    too_long: str
    max_depth: int
    #: the rule of a ``(`` nested deeper than ``max_depth``
    too_deep: str
    max_terms: int
    #: the rule of a filter of ``n`` restrictions, more than ``max_terms`` (refused at position 0)
    too_many: Callable[[int], str]
    #: whether a leaf counts against ``max_terms`` as it is read (those that merge with others do not)
    counts: Callable[[L], bool] = lambda meaning: True
    #: whether a token after a term starts another one (juxtaposition is ``AND``)
    continues: Callable[[Token], bool] = _anything_but_the_end
    #: whether ``NOT NOT a`` is read (else one ``NOT`` or ``-`` per term)
    repeated_negation: bool = True
    #: whether ``()`` is refused as "empty parentheses" (else it is a missing term)
    empty_parens_rule: bool = False
    #: whether ``field = (a OR b)`` compares the field with each value of the group
    value_groups: bool = False
    #: the rule of a field with an operator, checked before the value is read (None: it is fine)
    field_rule: Callable[[str, str], str | None] = lambda field, op: None


class Parser(Generic[L]):
    """One filter's text read by ``grammar`` from ``source``."""

    def __init__(self, text: str, grammar: Grammar[L], source: Source) -> None:
        self.text, self.g, self.src = text, grammar, source
        self.depth = 0
        self.terms = 0

    def error(self, pos: int, rule: str) -> FilterSyntaxError:
        return self.g.error(self.text, pos, rule)

    def parse(self) -> Node[L] | None:
        """The tree, or None for an empty filter (every item matches)."""
        if self.src.restrictions > self.g.max_terms:
            raise self.error(0, self.g.too_many(self.src.restrictions))
        if self.src.peek().kind == "end":
            return None
        node = self.conjunction(self.unary)
        tok = self.src.peek()
        if tok.kind != "end":
            raise self.error(tok.pos, f"unexpected {tok.text!r}")
        return node

    # conjunction := disjunction { ["AND"] disjunction }   (as AIP-160: OR binds tighter than AND)
    def conjunction(self, term: Callable[[], Node[L]]) -> Node[L]:
        parts = [self.disjunction(term)]
        while True:
            tok = self.src.peek()
            if tok.kind == "AND":
                self.src.take()
            elif not self.g.continues(tok):
                break
            parts.append(self.disjunction(term))
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    # disjunction := term { "OR" term }
    def disjunction(self, term: Callable[[], Node[L]]) -> Node[L]:
        parts = [term()]
        while self.src.peek().kind == "OR":
            self.src.take()
            parts.append(term())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def negations(self) -> bool:
        negated = False
        while self.src.peek().kind in ("NOT", "-"):
            self.src.take()
            negated = not negated
            if not self.g.repeated_negation:
                break
        return negated

    def group(self, term: Callable[[], Node[L]]) -> Node[L]:
        """``( ... )`` at the cursor, its terms read by ``term``; the depth is checked before recursing."""
        opening = self.src.take()
        if self.depth >= self.g.max_depth:
            raise self.error(opening.pos, self.g.too_deep)
        if self.g.empty_parens_rule and self.src.peek().kind == ")":
            raise self.error(self.src.peek().pos, "empty parentheses")
        self.depth += 1
        inner = self.conjunction(term)
        close = self.src.peek()
        if close.kind != ")":
            raise self.error(close.pos, "expected ')'")
        self.src.take()
        self.depth -= 1
        return inner

    # unary := { "NOT" | "-" } primary   (one negation only unless ``repeated_negation``)
    def unary(self) -> Node[L]:
        negated = self.negations()
        inner = self.primary()
        return Not(inner) if negated else inner

    # primary := "(" conjunction ")" | call | word [ op ( value | "(" value group ")" ) ]
    def primary(self) -> Node[L]:
        tok = self.src.peek()
        if tok.kind == "(":
            return self.group(self.unary)
        if tok.kind not in ("word", "other"):
            raise self.error(tok.pos, self.g.unexpected(tok))
        word = self.src.word()
        if word.kind == "call":
            return self.leaf(Restriction(word.text, "()", word.value, word.pos, word.end, word.end))
        op = self.src.operator()
        if op.kind != "op":
            return self.leaf(Restriction(word.text, None, "", word.pos, op.pos, op.pos))
        rule = self.g.field_rule(word.text, op.text)
        if rule is not None:
            raise self.error(word.pos, rule)
        value = self.src.value(f"{word.text}{op.text}")
        if value.kind == "(" and self.g.value_groups:
            return self.group(lambda: self.value_term(word, op))
        return self.leaf(Restriction(word.text, op.text, value.text, word.pos, op.pos, value.pos))

    def value_term(self, word: Token, op: Token) -> Node[L]:
        """One term of a value group: ``[NOT] value`` or a nested ``( ... )``."""
        negated = self.negations()
        if self.src.peek().kind == "(":
            inner = self.group(lambda: self.value_term(word, op))
        else:
            value = self.src.group_value(f"{word.text}{op.text}")
            inner = self.leaf(Restriction(word.text, op.text, value.text, word.pos, op.pos, value.pos))
        return Not(inner) if negated else inner

    def leaf(self, restriction: Restriction) -> Leaf[L]:
        """The restriction judged by the field table, counted: past ``max_terms`` the filter is refused
        at once, before the rest of it is parsed."""
        meaning = self.g.leaf(self.text, restriction)
        if self.g.counts(meaning):
            self.terms += 1
            if self.terms > self.g.max_terms:
                raise self.error(0, self.g.too_many(self.terms))
        return Leaf(restriction, meaning)


def parse(text: str, grammar: Grammar[L], source: Callable[[str], Source]) -> Node[L] | None:
    """The tree of ``text`` (None when it is empty), or the language's error; the length is checked
    before any reading."""
    if len(text) > grammar.max_chars:
        raise grammar.error(text, grammar.max_chars, grammar.too_long)
    return Parser(text, grammar, source(text)).parse()


def fold(
    node: Node[L],
    all_of: Callable[[list[R]], R],
    any_of: Callable[[list[R]], R],
    negate: Callable[[R], R],
    leaf: Callable[[L], R],
) -> R:
    """The tree evaluated bottom-up (its depth is bounded by the parser's ``max_depth``)."""
    if isinstance(node, Leaf):
        return leaf(node.meaning)
    if isinstance(node, Not):
        return negate(fold(node.inner, all_of, any_of, negate, leaf))
    parts = [fold(part, all_of, any_of, negate, leaf) for part in node.parts]
    return all_of(parts) if isinstance(node, And) else any_of(parts)
