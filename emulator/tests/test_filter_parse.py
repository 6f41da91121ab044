"""The one parser both filter languages share (core/filtering/parse.py): the tree it reads, the options
that keep each language's errors, and its bounds."""

from __future__ import annotations

import pytest

from vertex_emulator.core.filtering import (
    And,
    Cursor,
    FilterSyntaxError,
    Grammar,
    Leaf,
    Lexicon,
    Node,
    Not,
    Or,
    Restriction,
    Token,
    TokenList,
    fold,
    parse,
)


class _Error(FilterSyntaxError):
    def __init__(self, text: str, pos: int, rule: str) -> None:
        super().__init__(text, pos, rule, f"{rule} at {pos}")


_LEXICON = Lexicon(error=_Error, operators=("=",))


def _tokens(text: str) -> TokenList:
    """A toy language tokenized whole: words, ``=``, a value after it, parentheses and keywords."""
    cursor, out = Cursor(text, _LEXICON), list[Token]()
    while not cursor.at_end():
        pos = cursor.pos
        if out and out[-1].kind == "op":
            out.append(Token("value", cursor.literal("value missing")[0], pos))
        elif text[pos] in "()-":
            cursor.pos += 1
            out.append(Token(text[pos], text[pos], pos))
        elif cursor.operator():
            out.append(Token("op", "=", pos))
        else:
            word = cursor.word(frozenset("()="))
            out.append(Token(word if word in ("AND", "OR", "NOT") else "word", word, pos))
    out.append(Token("end", "", len(text)))
    return TokenList(out)


def _grammar(**options: object) -> Grammar[str]:
    base: dict[str, object] = dict(
        error=_Error,
        leaf=lambda text, r: f"{r.field}{r.op}{r.value}",
        unexpected=lambda tok: f"unexpected {tok.kind}",
        max_chars=1000,
        too_long="too long",
        max_depth=3,
        too_deep="too deep",
        max_terms=4,
        too_many=lambda n: f"{n} terms",
    )
    base.update(options)
    return Grammar(**base)  # type: ignore[arg-type]


def _show(node: Node[str] | None) -> str:
    if node is None:
        return "ALL"
    return fold(
        node,
        lambda parts: "(" + " & ".join(parts) + ")",
        lambda parts: "(" + " | ".join(parts) + ")",
        lambda inner: "!" + inner,
        lambda meaning: meaning,
    )


def test_the_tree_binds_or_tighter_than_and_and_reads_juxtaposition_as_and() -> None:
    tree = parse("a=1 AND b=2 OR -c=3 d=4", _grammar(), _tokens)
    assert isinstance(tree, And) and isinstance(tree.parts[1], Or) and isinstance(tree.parts[1].parts[1], Not)
    leaf = tree.parts[0]
    assert isinstance(leaf, Leaf) and leaf.restriction == Restriction("a", "=", "1", 0, 1, 2)
    assert _show(tree) == "(a=1 & (b=2 | !c=3) & d=4)"
    assert _show(parse("  ", _grammar(), _tokens)) == "ALL"


def test_negations_repeat_only_when_the_grammar_says_so() -> None:
    assert _show(parse("NOT NOT a=1", _grammar(), _tokens)) == "a=1"
    with pytest.raises(_Error, match="unexpected NOT at 4"):
        parse("NOT NOT a=1", _grammar(repeated_negation=False), _tokens)


def test_empty_parentheses_and_the_depth_limit_at_the_opening_parenthesis() -> None:
    with pytest.raises(_Error, match="empty parentheses at 1"):
        parse("()", _grammar(empty_parens_rule=True), _tokens)
    with pytest.raises(_Error, match="unexpected \\) at 1"):
        parse("()", _grammar(), _tokens)
    assert _show(parse("(((a=1)))", _grammar(), _tokens)) == "a=1"
    with pytest.raises(_Error, match="too deep at 3"):
        parse("((((a=1))))", _grammar(), _tokens)
    with pytest.raises(_Error, match="too deep at 3"):  # refused before recursing, never a RecursionError
        parse("(" * 100_000, _grammar(max_chars=100_000), _tokens)


def _as_read(text: str) -> TokenList:
    """The toy language's tokens, its restrictions not counted before parsing."""
    source = _tokens(text)
    source.restrictions = 0
    return source


def test_terms_are_counted_before_parsing_or_as_read_and_those_the_grammar_merges_are_not() -> None:
    many = " OR ".join(["a=1"] * 5)
    with pytest.raises(_Error, match="5 terms at 0"):
        parse(many + " (", _grammar(), _tokens)  # counted first: the later parse error does not win
    with pytest.raises(_Error, match="5 terms at 0"):
        parse(many, _grammar(), _as_read)
    assert parse(many, _grammar(counts=lambda meaning: meaning != "a=1"), _as_read) is not None


def test_which_tokens_continue_a_sequence() -> None:
    assert _show(parse("a=1 b=2", _grammar(), _tokens)) == "(a=1 & b=2)"
    with pytest.raises(_Error, match="unexpected 'b' at 4"):
        parse("a=1 b=2", _grammar(continues=lambda tok: tok.kind == "("), _tokens)


def test_a_bare_word_is_a_restriction_without_operator_and_the_length_is_checked_first() -> None:
    tree = parse("hello", _grammar(), _tokens)
    assert isinstance(tree, Leaf) and tree.restriction == Restriction("hello", None, "", 0, 5, 5)
    with pytest.raises(_Error, match="too long at 1000"):
        parse("(" * 1001, _grammar(), _tokens)
