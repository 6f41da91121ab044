"""The strict HTML check every page test uses: the emulator's pages here, and the provider's job view
(its tests load this file by path, as the emulator's tests are not a package the provider's run imports)."""

from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["StrictPage", "check_page"]

_VOID = frozenset({"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "source", "wbr"})
#: SVG elements written self-closed (``<line .../>``), which html.parser reports as start-end tags
_SELF_CLOSED_OK = frozenset({"line", "polyline", "circle", "rect", "path", "text"})


class StrictPage(HTMLParser):
    """Checks a page as a browser's strict reading would: a doctype first, ``<html lang>``, one
    non-empty title, every element closed in order, no stray end tag."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.doctype = ""
        self.lang = ""
        self.title = ""
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._in_title = False

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if not self.doctype:
            self.errors.append(f"<{tag}> before the doctype")
        if tag == "html":
            self.lang = dict(attrs).get("lang") or ""
        if tag in _VOID:
            return
        self.stack.append(tag)
        self._in_title = tag == "title"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in _VOID and tag not in _SELF_CLOSED_OK:
            self.errors.append(f"<{tag}/> is not a void element")

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            self.errors.append(f"</{tag}> closes a void element")
        elif not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> while {self.stack[-1:]} is open")
        else:
            self.stack.pop()
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


def check_page(page: str) -> StrictPage:
    """Parses ``page`` strictly and fails on any defect; the parser, for more checks."""
    parser = StrictPage()
    parser.feed(page)
    parser.close()
    assert parser.doctype.lower() == "doctype html", parser.doctype
    assert parser.lang == "en" and parser.title.strip()
    assert not parser.errors and not parser.stack, (parser.errors, parser.stack)
    assert all(
        not value or "://" not in value or value.startswith("file:")
        for tag, attrs in parser.tags
        for key, value in attrs.items()
        if key in ("src", "href") and tag != "a"
    ), "external asset"
    assert "<script src" not in page and "<link" not in page
    return parser
